// The block chain as a graph (Boost.Graph): one vertex per block plus a source and a sink for what
// enters and leaves the chain, one edge per tensor carried forward. A "carried" edge i -> i+1 holds the hidden state (and
// text stream) entering block i+1; a "skip" edge push -> pop holds a U-Net-style skip tensor from
// the block that pushes it to the block that consumes it (the sink when nothing pops it).
//
// A cut before block p (a checkpoint boundary there) is crossed by every edge u -> v with
// u < p <= v: the bytes a checkpoint segment starting at p must save are the sum of those edges,
// not only the hidden state. For a chain from the analyzer this sum equals BlockCost::boundary_bytes.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

enum class EdgeKind { Carried, Skip };

struct TensorEdge {
  EdgeKind kind = EdgeKind::Carried;
  double bytes = 0;
};

using BlockGraphBase = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, TensorEdge>;

class BlockGraph {
 public:
  explicit BlockGraph(const BlockChain& chain);

  int block_count() const { return n_; }
  int sink() const { return n_; }        // everything after the last block (head, loss)
  int source() const { return n_ + 1; }  // everything before block 0 (embedders)
  const BlockGraphBase& graph() const { return g_; }

  // Bytes of every tensor crossing the cut just before block p (0 <= p < n): what a checkpoint
  // segment starting at p saves as its input.
  double bytes_entering(int p) const { return entering_[p]; }
  // Skip tensors alive across that cut (count, bytes).
  int skips_entering(int p) const { return skip_count_[p]; }
  double skip_bytes_entering(int p) const { return skip_bytes_[p]; }

 private:
  int n_ = 0;
  BlockGraphBase g_;
  std::vector<double> entering_, skip_bytes_;
  std::vector<int> skip_count_;
};

}  // namespace segadvise
