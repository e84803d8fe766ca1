// Video container headers through a dlopen'ed libavformat (video_probe.hpp). Built with FFmpeg's headers
// (Debian libavformat-dev) when CMake finds them; the library loaded at run time is the one of the same
// major version (its ABI: the struct fields read here are those of the headers built with).
#include "segadvise/trainers/video_probe.hpp"

#include <cmath>

#ifdef SEGADVISE_HAVE_AVFORMAT
#include <dlfcn.h>
extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/log.h>
}
#endif

namespace segadvise {

#ifdef SEGADVISE_HAVE_AVFORMAT
namespace {

#define SEGADVISE_STR2(x) #x
#define SEGADVISE_STR(x) SEGADVISE_STR2(x)

struct Av {
  int (*open_input)(AVFormatContext**, const char*, const AVInputFormat*, AVDictionary**) = nullptr;
  void (*close_input)(AVFormatContext**) = nullptr;
  std::string unavailable;
};

const Av& av() {
  static const Av a = [] {
    Av r;
    const char* lib = "libavformat.so." SEGADVISE_STR(LIBAVFORMAT_VERSION_MAJOR);
    void* h = ::dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      r.unavailable = std::string(lib) + " could not be loaded (Debian: libavformat" SEGADVISE_STR(LIBAVFORMAT_VERSION_MAJOR) ")";
      return r;
    }
    r.open_input = reinterpret_cast<decltype(r.open_input)>(::dlsym(h, "avformat_open_input"));
    r.close_input = reinterpret_cast<decltype(r.close_input)>(::dlsym(h, "avformat_close_input"));
    // libavutil is libavformat's dependency: dlsym searches it through the handle
    auto set_level = reinterpret_cast<void (*)(int)>(::dlsym(h, "av_log_set_level"));
    if (!r.open_input || !r.close_input) {
      r.unavailable = std::string(lib) + " lacks avformat_open_input";
      return r;
    }
    if (set_level) set_level(AV_LOG_QUIET);  // a damaged file is counted as unreadable, not printed
    return r;
  }();
  return a;
}

}  // namespace

const std::string& video_probe_unavailable() { return av().unavailable; }

std::optional<VideoHeader> read_video_header(const std::string& path) {
  const Av& a = av();
  if (!a.unavailable.empty()) return std::nullopt;
  AVFormatContext* ctx = nullptr;
  if (a.open_input(&ctx, path.c_str(), nullptr, nullptr) < 0) return std::nullopt;
  struct Close {
    const Av& a;
    AVFormatContext*& c;
    ~Close() { a.close_input(&c); }
  } close{a, ctx};
  for (unsigned i = 0; i < ctx->nb_streams; ++i) {
    const AVStream* st = ctx->streams[i];
    if (st->codecpar->codec_type != AVMEDIA_TYPE_VIDEO || (st->disposition & AV_DISPOSITION_ATTACHED_PIC)) continue;
    VideoHeader v;
    v.width = st->codecpar->width;
    v.height = st->codecpar->height;
    if (v.width <= 0 || v.height <= 0 || v.width > 1000000 || v.height > 1000000) return std::nullopt;
    if (st->nb_frames > 0) {
      v.frames = st->nb_frames;  // MP4/MOV: the sample count of the track's index
    } else {
      // Matroska/WebM keep no count: the duration (the stream's, else the file's) x the frame rate
      double seconds = -1;
      if (st->duration != AV_NOPTS_VALUE && st->duration > 0 && st->time_base.den > 0)
        seconds = static_cast<double>(st->duration) * st->time_base.num / st->time_base.den;
      else if (ctx->duration != AV_NOPTS_VALUE && ctx->duration > 0)
        seconds = static_cast<double>(ctx->duration) / AV_TIME_BASE;
      const AVRational fr = st->avg_frame_rate.num > 0 && st->avg_frame_rate.den > 0 ? st->avg_frame_rate : st->r_frame_rate;
      if (seconds <= 0 || fr.num <= 0 || fr.den <= 0) return std::nullopt;
      const double n = std::llround(seconds * fr.num / fr.den);
      if (!(n >= 1) || n > 1e9) return std::nullopt;
      v.frames = static_cast<long long>(n);
    }
    return v;
  }
  return std::nullopt;
}

#else

const std::string& video_probe_unavailable() {
  static const std::string why = "segadvise was built without libavformat's headers (Debian libavformat-dev)";
  return why;
}
std::optional<VideoHeader> read_video_header(const std::string&) { return std::nullopt; }

#endif

}  // namespace segadvise
