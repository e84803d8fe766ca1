// Writing output files safely: the target is a regular file or a new path (never a device node, FIFO,
// socket or directory; a symlink only when asked), the text goes to a temporary file beside it that is
// renamed over the target: on Linux an unnamed file (O_TMPFILE) given a name (`.segadvise-PID-N`)
// only for the rename itself, so even SIGKILL mid-write leaves nothing beside the target; where the
// filesystem lacks O_TMPFILE, a named `.segadvise-XXXXXX` (short enough for any valid name). The target's
// permission bits (and, where the process may, its owner) are kept (a new file gets 0666 minus the
// umask), and a temporary file is removed on
// any error and on SIGINT/SIGTERM/SIGHUP. Several files of one command go through one OutputTransaction:
// all are written, or none; two names of one file (`x` and `out/../x`) are refused.
#pragma once

#include <string>
#include <vector>

namespace segadvise {

struct OutputOptions {
  bool allow_symlink = false;  // write through a symlink to the file it names (it must be regular or new)
};

// Every output of one command, all or none. stage() checks the target and writes its temporary file
// (InputError naming the path on any failure); commit() renames every temporary over its target,
// keeping each replaced file under a second name (a hard link, or a copy) until all renames are done,
// so a rename that fails part-way puts back what the earlier ones replaced (and removes the files
// that were new); the destructor removes what was staged but not committed.
class OutputTransaction {
 public:
  explicit OutputTransaction(OutputOptions opt = {});
  ~OutputTransaction();
  OutputTransaction(const OutputTransaction&) = delete;
  OutputTransaction& operator=(const OutputTransaction&) = delete;

  void stage(const std::string& path, const std::string& text);
  void commit();
  // removes every staged temporary file (also what the destructor does)
  void abort() noexcept;

 private:
  struct Staged {
    std::string path;    // the user's path (for messages)
    std::string target;  // what gets replaced (the symlink's file when allow_symlink)
    std::string temp;      // the named temporary ("" while the text is in the unnamed `fd`)
    std::string identity;  // the target's file (two names of one file are refused)
    int fd = -1;           // an unnamed temporary (O_TMPFILE) not yet linked in
    std::string text;      // its text, for a named temporary where it cannot be linked in
  };
  void name_temp(Staged& s);
  OutputOptions opt_;
  std::vector<Staged> staged_;
};

// One file: a transaction of one.
void write_file_atomically(const std::string& path, const std::string& text, OutputOptions opt = {});

// No output of a command may be one of its inputs: InputError naming `flag`, the output and the input
// when `output` is the same file as one of `inputs` (same device and inode, symlinks followed, so a
// symlink or a hard link to an input is refused too). An output that does not exist yet passes.
void check_output_is_not_input(const std::string& output, const std::vector<std::string>& inputs,
                               const std::string& flag);

// How many temporary files are registered for removal on a signal (for tests).
int pending_output_temps();

}  // namespace segadvise
