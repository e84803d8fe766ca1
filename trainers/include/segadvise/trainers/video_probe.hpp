// A video file's width, height and frame count from its container header, through libavformat (FFmpeg's
// demuxers: MP4/MOV, Matroska/WebM and the rest), which is loaded with dlopen the first time a video is
// read: linking it would load some 130 shared libraries at every start of segadvise (about 0.1 s), for a
// command that reads no video. Only the header is read (avformat_open_input); no packet is decoded and
// avformat_find_stream_info, which decodes frames, is never called. docs/datasets.md.
#pragma once

#include <optional>
#include <string>

namespace segadvise {

struct VideoHeader {
  int width = 0, height = 0;
  long long frames = 0;  // the container's frame count, else duration x frame rate (rounded)
};

// "" when libavformat is loaded (or can be), else why not (not built with its headers; the library not
// found on this machine).
const std::string& video_probe_unavailable();
// nullopt when the file does not open as a container with a video stream of positive size and frames, or
// when libavformat is unavailable.
std::optional<VideoHeader> read_video_header(const std::string& path);

}  // namespace segadvise
