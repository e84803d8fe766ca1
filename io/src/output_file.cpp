#include "segadvise/io/output_file.hpp"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "segadvise/io/json_input.hpp"

namespace segadvise {

namespace {

// ---- temporary files removed on a signal -------------------------------------------------------
// A fixed table the handler can read without allocating: slot i holds a path while used[i] is 1.
constexpr int kSlots = 16;
constexpr int kSlotChars = PATH_MAX;
char g_temp_paths[kSlots][kSlotChars];
volatile sig_atomic_t g_temp_used[kSlots];
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];

void remove_temps_on_signal(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (g_temp_used[i]) ::unlink(g_temp_paths[i]);
  for (int k = 0; k < 3; ++k)
    if (kSignals[k] == sig) ::sigaction(sig, &g_previous[k], nullptr);
  ::raise(sig);  // delivered once this handler returns, with the previous disposition
}

// Checked before every temporary file: code that set its own handler since then is chained to.
void install_handlers() {
  for (int k = 0; k < 3; ++k) {
    struct sigaction current {};
    ::sigaction(kSignals[k], nullptr, &current);
    if (current.sa_handler == remove_temps_on_signal) continue;
    if (current.sa_handler == SIG_IGN) continue;  // e.g. under nohup: keep ignoring
    g_previous[k] = current;
    struct sigaction sa {};
    sa.sa_handler = remove_temps_on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(kSignals[k], &sa, nullptr);
  }
}

// Blocks the caught signals for its lifetime, so the table never changes under the handler.
class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : kSignals) sigaddset(&set, s);
    ::sigprocmask(SIG_BLOCK, &set, &old_);
  }
  ~SignalsBlocked() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

void register_temp(const std::string& path) {
  if (path.size() >= static_cast<std::size_t>(kSlotChars)) return;
  for (int i = 0; i < kSlots; ++i) {
    if (g_temp_used[i]) continue;
    std::memcpy(g_temp_paths[i], path.c_str(), path.size() + 1);
    g_temp_used[i] = 1;
    return;
  }
}

void unregister_temp(const std::string& path) {
  for (int i = 0; i < kSlots; ++i)
    if (g_temp_used[i] && path == g_temp_paths[i]) g_temp_used[i] = 0;
}

void remove_temp(const std::string& path) {
  SignalsBlocked blocked;
  ::unlink(path.c_str());
  unregister_temp(path);
}

// ---- the target ----------------------------------------------------------------------------------

// A path as echoed in a message: cut to kMaxEchoChars.
std::string shown(const std::string& path) { return "'" + brief_text(path) + "'"; }

std::string errno_text(int err) { return std::strerror(err); }

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

struct Target {
  std::string path;  // what the rename replaces
  bool exists = false;
  mode_t mode = 0;   // permission bits to give the new file
  uid_t uid = 0;     // owner of the file replaced (kept when the process may, e.g. as root)
  gid_t gid = 0;
  std::string identity;  // the same for two names of one file ("out/../x" and "x", hard links)
};

std::string parent_dir(const std::string& path);

mode_t new_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

Target check_target(const std::string& path, const OutputOptions& opt) {
  if (path.empty()) throw InputError("output file: empty path");
  Target t;
  t.path = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) throw InputError("cannot write " + shown(path) + ": " + errno_text(errno));
    t.mode = new_file_mode();
    // a new file: its directory's real path and its name
    const auto slash = path.find_last_of('/');
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    char* dir = ::realpath(parent_dir(path).c_str(), nullptr);
    t.identity = "new:" + (dir ? std::string(dir) : parent_dir(path)) + "/" + base;
    std::free(dir);
    return t;
  }
  if (S_ISLNK(st.st_mode)) {
    if (!opt.allow_symlink)
      throw InputError("cannot write " + shown(path) + ": it is a symbolic link (name the file it points to instead)");
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) throw InputError("cannot write " + shown(path) + ": the symbolic link points nowhere");
    t.path = real;
    std::free(real);
    if (::stat(t.path.c_str(), &st) != 0) throw InputError("cannot write " + shown(path) + ": " + errno_text(errno));
  }
  if (!S_ISREG(st.st_mode))
    throw InputError("cannot write " + shown(path) + ": it is " + kind_of(st.st_mode) +
                     " (output goes only to a regular file or a new path)");
  t.exists = true;
  t.identity = "file:" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  t.mode = st.st_mode & 07777;
  t.uid = st.st_uid;
  t.gid = st.st_gid;
  return t;
}

std::string parent_dir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

// Creates the temporary file beside `t.path` holding `text` with the target's mode; its name.
std::string write_named_temp(const Target& t, const std::string& user_path, const std::string& text) {
  std::string name = parent_dir(t.path) + "/.segadvise-XXXXXX";
  int fd = -1;
  {
    SignalsBlocked blocked;
    install_handlers();
    fd = ::mkstemp(name.data());
    if (fd < 0) {
      const int err = errno;
      throw InputError("cannot write " + shown(user_path) + ": cannot create a file in " + shown(parent_dir(t.path)) +
                       ": " + errno_text(err));
    }
    register_temp(name);
  }
  if (t.exists && (t.uid != ::geteuid() || t.gid != ::getegid()))
    (void)!::fchown(fd, t.uid, t.gid);  // best effort: only root may give a file away
  const bool ok = write_all(fd, text) && ::fchmod(fd, t.mode) == 0 && ::fsync(fd) == 0;
  const int err = errno;
  if (::close(fd) != 0 || !ok) {
    remove_temp(name);
    throw InputError("cannot write " + shown(user_path) + ": " + errno_text(ok ? errno : err));
  }
  return name;
}

// The text in an unnamed file of the target's directory (Linux O_TMPFILE): until commit links it
// in, the directory holds nothing of it, so even SIGKILL mid-write leaves nothing beside the
// target. -1 where the filesystem or kernel has no O_TMPFILE (the caller then writes a named one).
int write_unnamed_temp(const Target& t, const std::string& user_path, const std::string& text) {
#ifdef O_TMPFILE
  const int fd = ::open(parent_dir(t.path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, t.mode);
  if (fd < 0) {
    // no O_TMPFILE here: EOPNOTSUPP (filesystem), EISDIR or EINVAL (kernel); anything else is real
    if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) return -1;
    const int err = errno;
    throw InputError("cannot write " + shown(user_path) + ": cannot create a file in " + shown(parent_dir(t.path)) +
                     ": " + errno_text(err));
  }
  if (t.exists && (t.uid != ::geteuid() || t.gid != ::getegid()))
    (void)!::fchown(fd, t.uid, t.gid);  // best effort: only root may give a file away
  if (!(write_all(fd, text) && ::fchmod(fd, t.mode) == 0 && ::fsync(fd) == 0)) {
    const int err = errno;
    ::close(fd);
    throw InputError("cannot write " + shown(user_path) + ": " + errno_text(err));
  }
  return fd;
#else
  (void)t, (void)user_path, (void)text;
  return -1;
#endif
}

// Gives an unnamed temporary file a name beside `target` (registered for removal on a signal, as a
// named temporary is): through /proc/self/fd, else AT_EMPTY_PATH (which needs a capability).
// Empty when neither works (no /proc mounted): the caller writes a named temporary instead.
std::string link_unnamed_temp(int fd, const std::string& target) {
  static unsigned counter = 0;
  const std::string dir = parent_dir(target);
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, "%ld-%u", static_cast<long>(::getpid()), counter++);
    const std::string name = dir + "/.segadvise-" + suffix;
    SignalsBlocked blocked;
    install_handlers();
    int rc = ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW);
    if (rc != 0 && errno != EEXIST) rc = ::linkat(fd, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH);
    if (rc == 0) {
      register_temp(name);
      return name;
    }
    if (errno != EEXIST) return {};
  }
  return {};
}

// ---- undoing a commit that failed part-way -------------------------------------------------------
struct Replaced {
  std::string target;
  std::string old;   // what the target held before (a hard link or a copy); empty when it was new
  std::string temp;  // the temporary name the new text came from (now gone)
};

// The target's file under a second name beside it, `<temp>.old`: a hard link, or a copy where the
// filesystem has no hard links. Empty when the target does not exist (a new file: undone by removal).
std::string keep_old_file(const std::string& target, const std::string& temp, const std::string& user_path) {
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) return {};
  const std::string old = temp + ".old";
  if (::link(target.c_str(), old.c_str()) == 0) return old;
  std::string text;
  {
    std::ifstream in(target, std::ios::binary);
    std::ostringstream buf;
    buf << in.rdbuf();
    if (!in.good() && !in.eof()) throw InputError("cannot write " + shown(user_path) + ": cannot keep its old text");
    text = buf.str();
  }
  const int fd = ::open(old.c_str(), O_WRONLY | O_CREAT | O_EXCL, st.st_mode & 07777);
  const bool ok = fd >= 0 && write_all(fd, text) && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) {
    ::unlink(old.c_str());
    throw InputError("cannot write " + shown(user_path) + ": cannot keep its old text beside it");
  }
  return old;
}

// Renames back what a failed commit replaced, newest first; a target that was new is removed.
void put_back(const std::vector<Replaced>& done) noexcept {
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    if (it->old.empty())
      ::unlink(it->target.c_str());
    else
      ::rename(it->old.c_str(), it->target.c_str());
  }
}

}  // namespace

OutputTransaction::OutputTransaction(OutputOptions opt) : opt_(opt) {}

OutputTransaction::~OutputTransaction() { abort(); }

void OutputTransaction::abort() noexcept {
  for (auto& s : staged_) {
    if (s.fd >= 0) ::close(s.fd);
    if (!s.temp.empty()) remove_temp(s.temp);
  }
  staged_.clear();
}

void OutputTransaction::stage(const std::string& path, const std::string& text) {
  const Target t = check_target(path, opt_);
  for (const auto& s : staged_) {
    if (s.identity != t.identity) continue;
    if (s.path == path) throw InputError("output file " + shown(path) + " is named twice");
    throw InputError("output files " + shown(s.path) + " and " + shown(path) +
                     " are the same file: give each output a path of its own");
  }
  Staged st{path, t.path, {}, t.identity, -1, {}};
  st.fd = write_unnamed_temp(t, path, text);
  if (st.fd >= 0)
    st.text = text;  // for a named temporary at commit if the unnamed one cannot be linked in
  else
    st.temp = write_named_temp(t, path, text);
  staged_.push_back(std::move(st));
}

// An unnamed temporary gets its name beside the target just before its rename (or, where it cannot
// be linked in, the text goes to a named temporary then)
void OutputTransaction::name_temp(Staged& s) {
  if (s.fd < 0) return;
  s.temp = link_unnamed_temp(s.fd, s.target);
  ::close(s.fd);
  s.fd = -1;
  if (s.temp.empty()) s.temp = write_named_temp(check_target(s.path, opt_), s.path, s.text);
  s.text.clear();
}

void OutputTransaction::commit() {
  // the targets again, just before replacing them: one turned into a device or link meanwhile is refused
  for (const auto& s : staged_) check_target(s.path, opt_);
  SignalsBlocked blocked;  // a commit is renames only: a signal waits until it is done or undone
  std::vector<Replaced> done;
  const auto undo = [&] {  // what was renamed goes back; the rest stays staged (removed by abort)
    put_back(done);
    for (const auto& d : done) unregister_temp(d.temp);
    staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(done.size()));
  };
  const auto put_back_note = [&] { return done.empty() ? "" : " (the files written before it were put back)"; };
  for (auto& s : staged_) {
    std::string old;  // one file needs no way back: its rename either happens or not
    try {
      name_temp(s);
      if (staged_.size() > 1) old = keep_old_file(s.target, s.temp, s.path);
    } catch (const InputError& e) {
      const std::string what = e.what() + std::string(put_back_note());
      undo();
      throw InputError(what);
    }
    if (::rename(s.temp.c_str(), s.target.c_str()) != 0) {
      const int err = errno;
      if (!old.empty()) ::unlink(old.c_str());
      const std::string note = put_back_note();
      const std::string path = s.path;  // `s` is an element undo() may erase
      undo();
      throw InputError("cannot write " + shown(path) + ": rename failed: " + errno_text(err) + note);
    }
    done.push_back({s.target, old, s.temp});
  }
  for (const auto& d : done) {
    if (!d.old.empty()) ::unlink(d.old.c_str());
    unregister_temp(d.temp);
  }
  staged_.clear();
}

void write_file_atomically(const std::string& path, const std::string& text, OutputOptions opt) {
  OutputTransaction tx(opt);
  tx.stage(path, text);
  tx.commit();
}

int pending_output_temps() {
  int n = 0;
  for (int i = 0; i < kSlots; ++i) n += g_temp_used[i] != 0;
  return n;
}


void check_output_is_not_input(const std::string& output, const std::vector<std::string>& inputs,
                               const std::string& flag) {
  struct stat out {};
  if (output.empty() || ::stat(output.c_str(), &out) != 0) return;  // a new file is no input
  for (const std::string& input : inputs) {
    struct stat in {};
    if (input.empty() || ::stat(input.c_str(), &in) != 0) continue;  // its reader reports it
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw InputError(flag + " " + shown(output) + " is the input " + shown(input) +
                       ": writing it would replace what is being read; name another file");
  }
}

}  // namespace segadvise
