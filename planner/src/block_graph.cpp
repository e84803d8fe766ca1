#include "segadvise/planner/block_graph.hpp"

#include <algorithm>

namespace segadvise {

BlockGraph::BlockGraph(const BlockChain& chain)
    : n_(static_cast<int>(chain.blocks.size())), g_(static_cast<std::size_t>(n_) + 2) {
  // Skip edges: pushes go on a stack, a pop consumes bytes from the top (last pushed, first
  // popped), possibly from several pushes when the widths differ; what is never popped runs to
  // the sink.
  struct Pushed {
    int block;
    double bytes;
  };
  std::vector<Pushed> stack;
  for (int i = 0; i < n_; ++i) {
    const BlockCost& b = chain.blocks[i];
    double pop = b.skip_pop_bytes;
    while (pop > 0 && !stack.empty()) {
      Pushed& top = stack.back();
      const double take = std::min(pop, top.bytes);
      boost::add_edge(top.block, i, TensorEdge{EdgeKind::Skip, take}, g_);
      top.bytes -= take;
      pop -= take;
      if (top.bytes <= 0) stack.pop_back();
    }
    if (b.skip_push_bytes > 0) stack.push_back({i, b.skip_push_bytes});
  }
  for (const Pushed& p : stack) boost::add_edge(p.block, n_, TensorEdge{EdgeKind::Skip, p.bytes}, g_);

  // Carried edges: what enters block p besides the skip tensors alive there (hidden state, text
  // stream). The source vertex stands for the embedders before block 0.
  std::vector<double> alive(n_ + 1, 0.0);  // skip bytes alive across cut p, from the skip edges
  for (auto [e, end] = boost::edges(g_); e != end; ++e) {
    const int u = static_cast<int>(boost::source(*e, g_)), v = static_cast<int>(boost::target(*e, g_));
    for (int p = u + 1; p <= std::min(v, n_ - 1); ++p) alive[p] += g_[*e].bytes;
  }
  for (int p = 0; p < n_; ++p) {
    const double carried = std::max(0.0, chain.blocks[p].boundary_bytes - alive[p]);
    boost::add_edge(p == 0 ? source() : p - 1, p, TensorEdge{EdgeKind::Carried, carried}, g_);
  }
  if (n_ > 0) boost::add_edge(n_ - 1, n_, TensorEdge{EdgeKind::Carried, chain.blocks[n_ - 1].boundary_bytes}, g_);

  // Every cut, from the edges crossing it: u -> v crosses the cuts before blocks u+1 .. v.
  entering_.assign(n_, 0.0);
  skip_bytes_.assign(n_, 0.0);
  skip_count_.assign(n_, 0);
  for (auto [e, end] = boost::edges(g_); e != end; ++e) {
    const int su = static_cast<int>(boost::source(*e, g_)), v = static_cast<int>(boost::target(*e, g_));
    const int u = su == source() ? -1 : su;
    const TensorEdge& t = g_[*e];
    for (int p = u + 1; p <= std::min(v, n_ - 1); ++p) {
      entering_[p] += t.bytes;
      if (t.kind == EdgeKind::Skip) {
        skip_bytes_[p] += t.bytes;
        skip_count_[p] += 1;
      }
    }
  }
}

}  // namespace segadvise
