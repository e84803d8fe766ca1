// Tiny video files for the dataset tests, written with libavformat's muxers (the tests link it; segadvise
// itself only dlopens it to read headers). The packets are a few placeholder bytes, never decoded: what a
// reader of the header sees is the container's size, frame rate, frame count and duration, as a real file
// of that many frames would carry them. Deterministic: no timestamps of the day, no random ids (bitexact).
#pragma once

#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

namespace segadvise::test {

// `frames` frames of width x height at `fps` into `path`; the muxer is chosen by `format` ("mp4", "mov",
// "matroska", "webm"). Returns false when the muxer refuses.
inline bool write_video(const std::string& path, const char* format, int width, int height, int frames, int fps) {
  AVFormatContext* ctx = nullptr;
  if (avformat_alloc_output_context2(&ctx, nullptr, format, path.c_str()) < 0 || !ctx) return false;
  const std::string f = format;
  AVStream* st = avformat_new_stream(ctx, nullptr);
  bool ok = st != nullptr;
  if (ok) {
    st->codecpar->codec_type = AVMEDIA_TYPE_VIDEO;
    // WebM takes VP8/VP9/AV1 only; MP4 and MOV take Motion JPEG, Matroska anything
    st->codecpar->codec_id = f == "webm" ? AV_CODEC_ID_VP8 : AV_CODEC_ID_MJPEG;
    st->codecpar->width = width;
    st->codecpar->height = height;
    st->time_base = AVRational{1, fps};
    st->avg_frame_rate = AVRational{fps, 1};
    ctx->flags |= AVFMT_FLAG_BITEXACT;
    ok = (ctx->oformat->flags & AVFMT_NOFILE) || avio_open(&ctx->pb, path.c_str(), AVIO_FLAG_WRITE) >= 0;
  }
  if (ok) ok = avformat_write_header(ctx, nullptr) >= 0;
  AVPacket* pkt = av_packet_alloc();
  for (int i = 0; ok && i < frames; ++i) {
    ok = av_new_packet(pkt, 16) >= 0;
    if (!ok) break;
    for (int k = 0; k < 16; ++k) pkt->data[k] = static_cast<uint8_t>(k);
    pkt->stream_index = st->index;
    pkt->pts = pkt->dts = av_rescale_q(i, AVRational{1, fps}, st->time_base);
    pkt->duration = av_rescale_q(1, AVRational{1, fps}, st->time_base);
    pkt->flags |= AV_PKT_FLAG_KEY;
    ok = av_write_frame(ctx, pkt) >= 0;
    av_packet_unref(pkt);
  }
  av_packet_free(&pkt);
  if (ok) ok = av_write_trailer(ctx) >= 0;
  if (ctx->pb && !(ctx->oformat->flags & AVFMT_NOFILE)) avio_closep(&ctx->pb);
  avformat_free_context(ctx);
  return ok;
}

}  // namespace segadvise::test
