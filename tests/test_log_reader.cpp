// trainers/log_reader: out-of-memory messages, progress bars and memory readouts read from the
// fixtures in tests/fixtures/logs (each written from its trainer's own print format, see its README).
// Bytes are derived by hand: GiB = 2^30, MiB = 2^20, KiB = 2^10 bytes; seconds per step = 1 / (it/s).
#include <doctest/doctest.h>

#include <string>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/trainers/log_reader.hpp"

using namespace segadvise;

namespace {
LogReport fixture(const std::string& name) { return read_log_file(std::string(SEGADVISE_FIXTURES_DIR) + "/logs/" + name); }
constexpr long long kLogGiB = 1LL << 30, kLogMiB = 1LL << 20, kLogKiB = 1LL << 10;

const char* kOom22 =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 23.50 GiB "
    "of which 512.00 MiB is free. Process 4242 has 1.00 GiB memory in use. Including non-PyTorch memory, this process "
    "has 22.00 GiB memory in use. Of the allocated memory 20.00 GiB is allocated by PyTorch, and 1.25 GiB is reserved "
    "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n";
}  // namespace

TEST_CASE("a PyTorch 2.2+ out-of-memory message gives every figure in bytes and the other processes") {
  const LogReport r = fixture("simpletuner.txt");
  REQUIRE(r.oom.size() == 1);
  const OomMessage& m = r.oom[0];
  CHECK(m.line == 12);
  CHECK(m.gpu_index == 0);
  CHECK(m.tried_to_allocate_bytes == 3 * kLogGiB / 2);           // 1.50 GiB = 1610612736
  CHECK(m.total_capacity_bytes == 47 * kLogGiB / 2);             // 23.50 GiB
  CHECK(m.free_bytes == 512 * kLogMiB);                          // 512.00 MiB
  CHECK(m.process_in_use_bytes == 22 * kLogGiB);                 // "this process has 22.00 GiB"
  CHECK(m.allocated_by_pytorch_bytes == 20 * kLogGiB);
  CHECK(m.reserved_unallocated_bytes == 5 * kLogGiB / 4);        // 1.25 GiB
  CHECK_FALSE(m.reserved_total_bytes.has_value());            // 2.2+ does not print it
  REQUIRE(m.other_processes.size() == 1);
  CHECK(m.other_processes[0].pid == 4242);
  CHECK(m.other_processes[0].bytes == kLogGiB);
  CHECK(m.phase == "training_step");  // accelerator.backward in the traceback above it
}

TEST_CASE("the parenthesised message of 1.5 to 2.0 reads alike from either trainer") {
  const LogReport a = fixture("ai_toolkit.txt");
  REQUIRE(a.oom.size() == 1);
  CHECK(a.oom[0].gpu_index == 1);
  CHECK(a.oom[0].tried_to_allocate_bytes == 256 * kLogMiB);
  CHECK(a.oom[0].total_capacity_bytes == 47 * kLogGiB / 2);
  CHECK(a.oom[0].allocated_by_pytorch_bytes == 87 * kLogGiB / 4);  // 21.75 GiB "already allocated"
  CHECK(a.oom[0].free_bytes == 128 * kLogMiB);
  CHECK(a.oom[0].reserved_total_bytes == 45 * kLogGiB / 2);        // 22.50 GiB "reserved in total by PyTorch"
  CHECK_FALSE(a.oom[0].reserved_unallocated_bytes.has_value());
  CHECK_FALSE(a.oom[0].process_in_use_bytes.has_value());
  CHECK(a.oom[0].phase == "sampling");  // generate_images in the traceback

  const LogReport o = fixture("onetrainer.txt");
  REQUIRE(o.oom.size() == 1);
  CHECK(o.oom[0].tried_to_allocate_bytes == 2 * kLogMiB);
  CHECK(o.oom[0].free_bytes == 3 * kLogMiB / 2);                   // 1.50 MiB
  CHECK(o.oom[0].reserved_total_bytes == 89 * kLogGiB / 4);        // 22.25 GiB
  CHECK(o.oom[0].phase == "training_step");
}

TEST_CASE("a message hard-wrapped inside a rich panel, words split, reads as one") {
  const LogReport r = fixture("musubi_tuner.txt");
  REQUIRE(r.oom.size() == 1);
  const OomMessage& m = r.oom[0];
  CHECK(m.tried_to_allocate_bytes == 640 * kLogMiB);
  CHECK(m.total_capacity_bytes == 317 * kLogGiB / 4);      // 79.25 GiB
  CHECK(m.free_bytes == 300 * kLogMiB);
  CHECK(m.process_in_use_bytes == 315 * kLogGiB / 4);      // "non-PyTo │ rch memory, this process has 78.75 GiB"
  CHECK(m.allocated_by_pytorch_bytes == 153 * kLogGiB / 2);  // 76.50 GiB on the next line
  CHECK(m.private_pools_bytes == 2 * kLogGiB);
  CHECK(m.reserved_unallocated_bytes == 7 * kLogGiB / 4);  // 1.75 GiB
  CHECK(m.phase == "training_step");
}

TEST_CASE("a HIP message in KiB, wrapped with indentation, during latent caching") {
  const LogReport r = fixture("kohya.txt");
  REQUIRE(r.oom.size() == 1);
  CHECK(r.oom[0].tried_to_allocate_bytes == 768 * kLogKiB);
  CHECK(r.oom[0].free_bytes == 512 * kLogKiB);
  CHECK(r.oom[0].total_capacity_bytes == 17158394348LL);  // 15.98 x 2^30 = 17158394347.52, rounded
  CHECK(r.oom[0].allocated_by_pytorch_bytes == 31 * kLogGiB / 2);
  CHECK(r.oom[0].reserved_unallocated_bytes == 128 * kLogMiB);
  CHECK(r.oom[0].phase == "caching");  // in cache_latents
}

TEST_CASE("wrapping a message at any width changes none of its figures") {
  const std::string line = kOom22;
  for (std::size_t width : {7u, 13u, 40u, 80u}) {
    std::string wrapped;
    for (std::size_t i = 0; i < line.size(); i += width) wrapped += "  " + line.substr(i, width) + "\n";
    const LogReport r = read_log_text(wrapped, "pasted");
    CAPTURE(width);
    REQUIRE(r.oom.size() == 1);
    CHECK(r.oom[0].tried_to_allocate_bytes == 3 * kLogGiB / 2);
    CHECK(r.oom[0].free_bytes == 512 * kLogMiB);
    CHECK(r.oom[0].reserved_unallocated_bytes == 5 * kLogGiB / 4);
    REQUIRE(r.oom[0].other_processes.size() == 1);
    CHECK(r.oom[0].other_processes[0].pid == 4242);
  }
}

TEST_CASE("a message with no figures is reported with every figure absent, and the phase from the log") {
  const LogReport r = read_log_text("Saving model checkpoint\nRuntimeError: CUDA error: out of memory\n", "pasted");
  REQUIRE(r.oom.size() == 1);
  CHECK_FALSE(r.oom[0].tried_to_allocate_bytes.has_value());
  CHECK_FALSE(r.oom[0].gpu_index.has_value());
  CHECK(r.oom[0].phase == "save");
  CHECK(read_log_text("CUDA out of memory.\n", "pasted").oom[0].phase == "unknown");
}

TEST_CASE("progress bars: s/it and it/s, the last update of each bar, named by what they count") {
  const LogReport st = fixture("simpletuner.txt");
  REQUIRE(st.steps.size() == 3);
  CHECK(st.steps[0].what == "loading");  // Loading checkpoint shards
  CHECK(st.steps[1].what == "caching");  // Processing bucket (caching latents)
  CHECK(st.steps[1].sec_per_step == doctest::Approx(0.5));  // 2.00it/s
  // "Epoch 1/3 Steps" redrawn with '\r': its last update, 10/1000 at 2.50s/it
  CHECK(st.steps[2].what == "training_step");
  CHECK(st.steps[2].sec_per_step == doctest::Approx(2.5));
  CHECK(st.steps[2].step == 10);
  CHECK(st.steps[2].total == 1000);
  REQUIRE(st.last_training_step() != nullptr);
  CHECK(st.last_training_step()->step == 10);

  const LogReport mu = fixture("musubi_tuner.txt");
  REQUIRE(mu.steps.size() == 2);
  CHECK(mu.steps[0].what == "sampling");  // "Sampling timesteps for prompt 1" is never a step time
  CHECK(mu.steps[1].what == "training_step");
  CHECK(mu.steps[1].sec_per_step == doctest::Approx(2.56));
  CHECK(mu.steps[1].step == 41);

  const LogReport df = fixture("diffusers.txt");
  REQUIRE(df.last_training_step() != nullptr);
  CHECK(df.last_training_step()->sec_per_step == doctest::Approx(0.5));  // 2.00it/s
  CHECK(df.last_training_step()->step == 100);

  const LogReport ai = fixture("ai_toolkit.txt");  // a bar named after the job, showing the loss
  REQUIRE(ai.last_training_step() != nullptr);
  CHECK(ai.last_training_step()->label == "my_first_flux_lora_v1");
  CHECK(ai.last_training_step()->sec_per_step == doctest::Approx(2.0));

  const LogReport ot = fixture("onetrainer.txt");  // the epoch bar never reached a rate; the step bar did
  REQUIRE(ot.last_training_step() != nullptr);
  CHECK(ot.last_training_step()->sec_per_step == doctest::Approx(1.2));
  CHECK(read_log_text("epoch:  10%|█  | 1/10 [01:00<09:00, 60.00s/it]\n", "p").steps[0].what == "epoch");
}

TEST_CASE("DeepSpeed's step lines (diffusion-pipe) give the iteration time") {
  const LogReport r = fixture("diffusion_pipe.txt");
  REQUIRE(r.steps.size() == 1);
  CHECK(r.steps[0].sec_per_step == doctest::Approx(4.0));
  CHECK(r.steps[0].step == 20);
  CHECK(r.steps[0].what == "training_step");
}

TEST_CASE("memory readouts: an nvidia-smi table, its CSV and torch.cuda.memory_summary") {
  const LogReport ot = fixture("onetrainer.txt");
  REQUIRE(ot.memory.size() == 1);  // the process table's 20000MiB is not a readout of the card
  CHECK(ot.memory[0].source == "nvidia-smi");
  CHECK(ot.memory[0].gpu_index == 0);
  CHECK(ot.memory[0].used_bytes == 20480 * kLogMiB);
  CHECK(ot.memory[0].total_bytes == 24564 * kLogMiB);

  const LogReport df = fixture("diffusers.txt");
  REQUIRE(df.memory.size() == 3);
  CHECK(df.memory[0].source == "torch.cuda.memory_summary");
  CHECK(df.memory[0].allocated_bytes == 12 * kLogGiB);      // 12288 MiB
  CHECK(df.memory[0].max_allocated_bytes == 16 * kLogGiB);  // its peak column
  CHECK(df.memory[0].reserved_bytes == 18 * kLogGiB);       // GPU reserved memory 18432 MiB
  CHECK(df.memory[2].source == "nvidia-smi csv");
  CHECK(df.memory[2].gpu_index == 1);
  CHECK(df.memory[2].used_bytes == kLogGiB);
  CHECK(df.memory[2].total_bytes == 40 * kLogGiB);
}

TEST_CASE("sizes: binary units as PyTorch prints them, SI for KB/MB/GB") {
  CHECK(parse_size_text("20.00 MiB") == 20 * kLogMiB);
  CHECK(parse_size_text("1.5GiB") == 3 * kLogGiB / 2);
  CHECK(parse_size_text("512 bytes") == 512);
  CHECK(parse_size_text("0 B") == 0);
  CHECK(parse_size_text("2 GB") == 2000000000LL);
  CHECK_FALSE(parse_size_text("12 apples").has_value());
}

TEST_CASE("a file that is not text is an InputError naming it") {
  CHECK_THROWS_AS(read_log_file(std::string(SEGADVISE_FIXTURES_DIR) + "/logs-binary.bin"), InputError);
  CHECK_THROWS_WITH(read_log_text(std::string("ab\0cd", 5), "log 'x'"), doctest::Contains("not a text file"));
  CHECK_THROWS_WITH(read_log_text("caf\xe9\n", "log 'x'"), doctest::Contains("not a text file"));
  CHECK_THROWS_WITH(read_log_file(SEGADVISE_FIXTURES_DIR), doctest::Contains("not a regular file"));
}

// ---- PyTorch's out-of-memory wordings (pytorch_oom_forms.txt; docs/read-log.md has which version printed each)

TEST_CASE("2.1's sentence form with its 'total capacty' typo, with 'Process N has' and 'this process has'") {
  const LogReport r = fixture("pytorch_oom_forms.txt");
  REQUIRE(r.oom.size() == 5);
  const OomMessage& a = r.oom[0];  // "GPU 0 has a total capacty of 79.15 GiB of which 9.62 MiB is free"
  CHECK(a.line == 5);
  CHECK(a.gpu_index == 0);
  CHECK(a.tried_to_allocate_bytes == 20 * kLogMiB);
  CHECK(a.total_capacity_bytes == 84986665370LL);        // 79.15 x 2^30 = 84986665369.6
  CHECK(a.free_bytes == 10087301);                       // 9.62 x 2^20 = 10087301.12
  REQUIRE(a.other_processes.size() == 1);
  CHECK(a.other_processes[0].pid == 12345);
  CHECK(a.other_processes[0].bytes == 84965190533LL);    // 79.13 x 2^30 = 84965190533.12
  CHECK_FALSE(a.process_in_use_bytes.has_value());
  CHECK(a.allocated_by_pytorch_bytes == 83268678451LL);  // 77.55 x 2^30 = 83268678451.2
  CHECK(a.reserved_unallocated_bytes == 1148903752LL);   // 1.07 x 2^30 = 1148903751.68
  CHECK(a.phase == "training_step");

  const OomMessage& b = r.oom[1];
  CHECK(b.gpu_index == 1);
  CHECK(b.tried_to_allocate_bytes == 64 * kLogMiB);
  CHECK(b.total_capacity_bytes == 25393994138LL);        // 23.65 x 2^30 = 25393994137.6
  CHECK(b.free_bytes == 42792387);                       // 40.81 x 2^20 = 42792386.56
  REQUIRE(b.other_processes.size() == 1);
  CHECK(b.other_processes[0].pid == 2201);
  CHECK(b.other_processes[0].bytes == 512 * kLogMiB);
  CHECK(b.process_in_use_bytes == 24803436134LL);        // "this process has 23.10 GiB": 24803436134.4
  CHECK(b.allocated_by_pytorch_bytes == 89 * kLogGiB / 4);     // 22.25 GiB
  CHECK(b.reserved_unallocated_bytes == 769 * kLogMiB / 2);    // 384.50 MiB
}

TEST_CASE("the parenthesised forms: 2.0's 'reserved in total', 1.0-1.4's 'cached'") {
  const LogReport r = fixture("pytorch_oom_forms.txt");
  REQUIRE(r.oom.size() == 5);
  const OomMessage& c = r.oom[2];  // (GPU 0; 23.65 GiB total capacity; 21.50 GiB already allocated; …)
  CHECK(c.gpu_index == 0);
  CHECK(c.tried_to_allocate_bytes == 128 * kLogMiB);
  CHECK(c.total_capacity_bytes == 25393994138LL);
  CHECK(c.allocated_by_pytorch_bytes == 43 * kLogGiB / 2);  // 21.50 GiB
  CHECK(c.free_bytes == 13170115);                          // 12.56 x 2^20 = 13170114.56
  CHECK(c.reserved_total_bytes == 23729694310LL);           // 22.10 x 2^30 = 23729694310.4
  CHECK_FALSE(c.reserved_unallocated_bytes.has_value());

  const OomMessage& d = r.oom[3];  // RuntimeError: … (GPU 0; 10.92 GiB total capacity; …; 187.73 MiB cached)
  CHECK(d.tried_to_allocate_bytes == 25 * kLogMiB / 2);     // 12.50 MiB
  CHECK(d.total_capacity_bytes == 11725260718LL);           // 10.92 x 2^30 = 11725260718.08
  CHECK(d.allocated_by_pytorch_bytes == 39 * kLogGiB / 4);  // 9.75 GiB
  CHECK(d.free_bytes == 2946499);                           // 2.81 x 2^20 = 2946498.56
  CHECK(d.reserved_unallocated_bytes == 196849172);         // 187.73 x 2^20 = 196849172.48
  CHECK_FALSE(d.reserved_total_bytes.has_value());
}

TEST_CASE("torch.OutOfMemoryError: HIP out of memory (ROCm), and the either spelling in either form") {
  const LogReport r = fixture("pytorch_oom_forms.txt");
  REQUIRE(r.oom.size() == 5);
  const OomMessage& e = r.oom[4];
  CHECK(e.line == 25);
  CHECK(e.tried_to_allocate_bytes == 2 * kLogGiB);
  CHECK(e.total_capacity_bytes == 206136955372LL);         // 191.98 x 2^30 = 206136955371.52
  CHECK(e.free_bytes == 3 * kLogGiB / 2);
  CHECK(e.allocated_by_pytorch_bytes == 185 * kLogGiB);
  CHECK(e.reserved_unallocated_bytes == 13 * kLogGiB / 4);  // 3.25 GiB

  // the typo in the parenthesised form, and "GPU" with no index: the same figures, no index
  const LogReport p = read_log_text(
      "CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 8.00 GiB total capacty; 7.00 GiB already allocated; "
      "1.00 MiB free; 7.50 GiB reserved in total by PyTorch)\n", "p");
  REQUIRE(p.oom.size() == 1);
  CHECK(p.oom[0].total_capacity_bytes == 8 * kLogGiB);
  CHECK(p.oom[0].reserved_total_bytes == 15 * kLogGiB / 2);
  const LogReport g = read_log_text(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU has a total capacty of 8.00 GiB of "
      "which 1.00 MiB is free. Of the allocated memory 7.00 GiB is allocated by PyTorch, and 0 bytes is reserved by "
      "PyTorch but unallocated.\n", "g");
  REQUIRE(g.oom.size() == 1);
  CHECK_FALSE(g.oom[0].gpu_index.has_value());
  CHECK(g.oom[0].total_capacity_bytes == 8 * kLogGiB);
  CHECK(g.oom[0].free_bytes == kLogMiB);
  CHECK(g.oom[0].reserved_unallocated_bytes == 0);
}

TEST_CASE("an MPS out-of-memory message: its KB, MB, GB are powers of 1024") {
  const LogReport r = read_log_text(
      "  File \"train.py\", line 88, in train_step\n    loss.backward()\n"
      "RuntimeError: MPS backend out of memory (MPS allocated: 18.00 GB, other allocations: 40.00 KB, max allowed: "
      "18.13 GB). Tried to allocate 256.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable "
      "upper limit for memory allocations (may cause system failure).\n", "p");
  REQUIRE(r.oom.size() == 1);
  CHECK(r.oom[0].tried_to_allocate_bytes == 256 * kLogMiB);
  CHECK(r.oom[0].allocated_by_pytorch_bytes == 18 * kLogGiB);
  CHECK_FALSE(r.oom[0].total_capacity_bytes.has_value());  // "max allowed" is the allocator's limit, not the device's
  CHECK(r.oom[0].phase == "training_step");
  CHECK(r.memory.empty());
}

// ---- memory readouts other than the table and the summary

TEST_CASE("nvidia-smi CSV: --query-gpu with and without header and units, --query-compute-apps") {
  const LogReport r = fixture("nvidia_smi_csv.txt");
  REQUIRE(r.memory.size() == 5);
  CHECK(r.memory[0].line == 3);
  CHECK(r.memory[0].source == "nvidia-smi csv");
  CHECK(r.memory[0].gpu_index == 0);
  CHECK(r.memory[0].used_bytes == 20345 * kLogMiB);
  CHECK(r.memory[0].total_bytes == 24564 * kLogMiB);
  CHECK(r.memory[1].gpu_index == 1);
  CHECK(r.memory[1].used_bytes == 512 * kLogMiB);
  // --format=csv,noheader,nounits: the command names the columns, the figures are MiB
  CHECK(r.memory[2].line == 6);
  CHECK_FALSE(r.memory[2].gpu_index.has_value());
  CHECK(r.memory[2].used_bytes == 20345 * kLogMiB);
  CHECK(r.memory[2].total_bytes == 24564 * kLogMiB);
  // a process's memory: its own quantity, never the card's
  CHECK(r.memory[3].source == "nvidia-smi csv (compute apps)");
  CHECK(r.memory[3].pid == 23456);
  CHECK(r.memory[3].process_used_bytes == 19870 * kLogMiB);
  CHECK_FALSE(r.memory[3].used_bytes.has_value());
  // nounits with a header: the header's [MiB]
  CHECK(r.memory[4].line == 12);
  CHECK(r.memory[4].used_bytes == 70123 * kLogMiB);
  CHECK(r.memory[4].total_bytes == 80 * kLogGiB);  // 81920 MiB
  // "0, [N/A]" gives no figure and ends the table: "20, 30" after it is not read
}

TEST_CASE("nvtop: the MEM meter in Gi (used of total, 2^30) with its device, and a process's GPU MEM") {
  const LogReport r = fixture("nvtop.txt");
  REQUIRE(r.memory.size() == 3);
  CHECK(r.memory[0].source == "nvtop");
  CHECK(r.memory[0].line == 3);
  CHECK(r.memory[0].gpu_index == 0);
  CHECK(r.memory[0].used_bytes == 19552838615LL);   // 18.210 x 2^30 = 19552838615.04
  CHECK(r.memory[0].total_bytes == 25756918874LL);  // 23.988 x 2^30 = 25756918874.11
  CHECK(r.memory[1].gpu_index == 1);
  CHECK(r.memory[1].used_bytes == kLogGiB / 4);     // 0.250Gi
  CHECK(r.memory[1].total_bytes == 24 * kLogGiB);
  CHECK(r.memory[2].pid == 12345);
  CHECK(r.memory[2].gpu_index == 0);
  CHECK(r.memory[2].process_used_bytes == 18200 * kLogMiB);
  CHECK_FALSE(r.memory[2].used_bytes.has_value());

  const LogReport one = read_log_text("GPU0 MEM 18.2Gi/24.0Gi\n", "p");  // the index on the meter's own line
  REQUIRE(one.memory.size() == 1);
  CHECK(one.memory[0].gpu_index == 0);
  CHECK(one.memory[0].used_bytes == 19542101197LL);  // 18.2 x 2^30 = 19542101196.8
  CHECK(one.memory[0].total_bytes == 24 * kLogGiB);
}

TEST_CASE("printed figures: DeepSpeed's see_memory_usage, labelled peaks and bare MiB, each with its quantity") {
  const LogReport r = fixture("printed_memory.txt");
  REQUIRE(r.memory.size() == 9);
  const MemoryReading& ds = r.memory[0];  // MA / Max_MA / CA / Max_CA, each divided by 1024**3
  CHECK(ds.line == 2);
  CHECK(ds.source == "deepspeed see_memory_usage");
  CHECK(ds.allocated_bytes == 13249974108LL);      // 12.34 x 2^30 = 13249974108.16
  CHECK(ds.max_allocated_bytes == 16825534382LL);  // 15.67 x 2^30 = 16825534382.08
  CHECK(ds.reserved_bytes == 16 * kLogGiB);
  CHECK(ds.max_reserved_bytes == 18 * kLogGiB);
  CHECK(ds.note.empty());
  // "peak memory: 17.3 GB": a peak whose quantity is not named, GB read as GiB; both said in the note
  CHECK(r.memory[1].line == 4);
  CHECK(r.memory[1].source == "printed");
  CHECK(r.memory[1].max_allocated_bytes == 18575733555LL);  // 17.3 x 2^30 = 18575733555.2
  CHECK(r.memory[1].note.find("names no quantity") != std::string::npos);
  CHECK(r.memory[1].note.find("GB read as GiB") != std::string::npos);
  CHECK(r.memory[2].max_allocated_bytes == 23031762125LL);  // "Peak VRAM 21.45GB": 23031762124.8
  CHECK(r.memory[3].max_allocated_bytes == 19542101197LL);  // max_memory_allocated: 18.2 GB
  CHECK(r.memory[3].note.find("names no quantity") == std::string::npos);
  CHECK(r.memory[4].max_reserved_bytes == 41 * kLogGiB / 2);  // max_memory_reserved(): 20.50 GiB
  CHECK(r.memory[4].note.empty());
  CHECK(r.memory[5].used_bytes == 18234 * kLogMiB);  // memory: 18234MiB
  CHECK(r.memory[6].used_bytes == 18234 * kLogMiB);  // VRAM used 18234 MiB
  CHECK(r.memory[7].allocated_bytes == 36469 * kLogMiB / 2);  // allocated=18234.5MiB
  CHECK(r.memory[7].note.empty());
  // a bar's postfix "mem=18234M": one reading, its last update's
  CHECK(r.memory[8].line == 11);
  CHECK(r.memory[8].used_bytes == 18234 * kLogMiB);
  REQUIRE(r.last_training_step() != nullptr);
  CHECK(r.last_training_step()->step == 501);
  // lines 12-20 (a model's parameter size, MB per image, what was freed, an estimate, a total, host memory,
  // a learning rate, a loss, a step count, "12M parameters", "Tried to allocate") give no readout
}

TEST_CASE("a printed figure of a total: 'VRAM: 18.2/24.0 GB', 'GPU mem 18234 / 24564 MiB'") {
  const LogReport a = read_log_text("VRAM: 18.2/24.0 GB\n", "p");
  REQUIRE(a.memory.size() == 1);
  CHECK(a.memory[0].used_bytes == 19542101197LL);  // 18.2 x 2^30 = 19542101196.8
  CHECK(a.memory[0].total_bytes == 24 * kLogGiB);
  const LogReport b = read_log_text("GPU mem 18234 / 24564 MiB\n", "p");
  REQUIRE(b.memory.size() == 1);
  CHECK(b.memory[0].used_bytes == 18234 * kLogMiB);
  CHECK(b.memory[0].total_bytes == 24564 * kLogMiB);
  CHECK(b.memory[0].note == "the label names no quantity: read as memory in use");
  CHECK(read_log_text("steps 500/1000 MiB\n", "p").memory.empty());  // no label naming the memory
}

TEST_CASE("no memory readout from a line that is not one") {
  for (const char* line :
       {"lr: 1.0e-04 loss: 0.0345 steps: 1200M", "epoch 3, step 1200M", "Model has 12M parameters",
        "learning_rate=5e-5, max_grad_norm=1.0", "model.safetensors: 100%|##| 23.8G/23.8G [01:00<00:00, 397MB/s]",
        "Saving checkpoint memory 4.2 GB", "free memory: 2.1 GB", "RAM: 32 GB", "mem (RAM) 3 GB", "Host memory: 12 GB",
        "xformers memory 1 M", "mem_eff_attn 1", "memory 1e-5G", "CPU Virtual Memory:  used = 45.3 GB",
        "Estimated VRAM: 18.5 GB", "GPU 2520MHz MEM 10501MHz TEMP  61°C", "memory: -1.2 GB",
        "index, name\n0, NVIDIA GeForce RTX 4090", "20345, 24564", "memory.used [MiB]\nabc",
        "to avoid outOfMemory error during startup on <=16G cards", "memory needed \xe2\x89\xa5 12G", "vram ~12 GB",
        "\"mem_bandwidth_note\": \"PCIe 80GB variant: 1935 GB/s\"",
        "out of memory while loading the text encoder on an 80GB card"}) {
    CAPTURE(line);
    CHECK(read_log_text(line, "p").memory.empty());
  }
}

TEST_CASE("a long line of labels and figures is read in one pass") {
  std::string line;
  for (int i = 0; i < 200000; ++i) line += "mem=1M, MEM ";
  const LogReport r = read_log_text(line + "\n", "p");
  REQUIRE(r.memory.size() == 1);
  CHECK(r.memory[0].used_bytes == kLogMiB);
}
