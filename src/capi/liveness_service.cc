#include "capi/liveness_service.h"

#include "common/log.h"
#include "wireup/rail_address.h"

namespace wireup::capi {

std::vector<uint8_t> wrap_address(const std::vector<uint8_t>& a, uint16_t port) {
  std::vector<uint8_t> out(kLivenessAddressExtra + a.size());
  out[0] = 3;
  out[1] = 'L';
  out[2] = static_cast<uint8_t>(port >> 8);
  out[3] = static_cast<uint8_t>(port & 0xff);
  std::copy(a.begin(), a.end(), out.begin() + kLivenessAddressExtra);
  return out;
}

Result<Unwrapped> unwrap_address(std::span<const uint8_t> b) {
  auto bad = [](const std::string& why) {
    return Error::make(ErrorCode::invalid_argument, "liveness address", why);
  };
  if (b.size() < kLivenessAddressExtra || b[0] != 3 || b[1] != 'L')
    return bad("no liveness endpoint (format 3): is liveness.enable the same on every rank?");
  Unwrapped u;
  u.engine_address.assign(b.begin() + kLivenessAddressExtra, b.end());
  auto rails = decode_rails(u.engine_address);
  if (!rails) return rails.error();
  u.endpoint = rails->front().addr;
  const uint16_t port = static_cast<uint16_t>(b[2] << 8 | b[3]);
  if (port == 0) return bad("liveness endpoint with port 0");
  u.endpoint.set_port(port);
  return u;
}

Result<std::unique_ptr<LivenessService>> LivenessService::create(uint32_t rank, uint64_t job_key, liveness::Params p,
                                                                 const prov::SockAddr& local) {
  if (const char* why = liveness::check(p); *why) return Error::make(ErrorCode::invalid_argument, "liveness", why);
  auto key = MacKey::derive(job_key);
  if (!key) return key.error();
  auto s = UdpSocket::open(local);
  if (!s) return s.error();
  return std::unique_ptr<LivenessService>(new LivenessService(rank, *key, p, std::move(s).value()));
}

Status LivenessService::set_job_key(uint64_t job_key) {
  auto key = MacKey::derive(job_key);
  if (!key) return key.error();
  key_ = *key;
  return Status::ok();
}

Status LivenessService::start(std::vector<prov::SockAddr> endpoints, Nanos now) {
  if (rank_ >= endpoints.size())
    return Error::make(ErrorCode::invalid_argument, "liveness",
                       "rank " + std::to_string(rank_) + " is not among the " + std::to_string(endpoints.size()) +
                           " endpoints");
  std::vector<uint64_t> node_of(endpoints.size());
  for (size_t r = 0; r < endpoints.size(); ++r) {
    if (endpoints[r].empty())
      return Error::make(ErrorCode::invalid_argument, "liveness", "rank " + std::to_string(r) + " has no endpoint");
    prov::SockAddr host = endpoints[r];
    host.set_port(0);
    node_of[r] = std::hash<std::string>{}(host.to_string());
  }
  endpoints_ = std::move(endpoints);
  det_ = std::make_unique<liveness::Detector>(rank_, std::make_shared<const liveness::Ring>(node_of), params_);
  det_->start(now);
  return Status::ok();
}

Status LivenessService::send_all(std::vector<liveness::Out>& out) {
  for (const liveness::Out& o : out) {
    const auto bytes = liveness::seal(o.msg, key_);
    auto r = sock_.send_to(endpoints_[o.to], bytes);
    if (!r) {
      // One unreachable endpoint must not stop the others' heartbeats: counted and logged.
      if (stats_.send_errors++ == 0) WIREUP_LOG(warn, "rank %u: liveness: %s (rank %u)", rank_, r.error().message().c_str(), o.to);
      continue;
    }
    ++(*r == UdpSocket::Sent::sent ? stats_.sent : stats_.send_again);
  }
  out.clear();
  return Status::ok();
}

Result<int> LivenessService::progress(Nanos now, std::vector<uint32_t>& deaths) {
  if (!det_) return 0;
  int work = 0;
  std::vector<liveness::Out> out;
  std::array<uint8_t, liveness::kWireMax + 1> buf{};
  for (int i = 0; i < 1024; ++i) {  // bounded: a flood cannot hold the caller
    prov::SockAddr from;
    auto n = sock_.receive(buf, from);
    if (!n) return n.error();
    if (*n == 0) break;
    ++work;
    ++stats_.received;
    auto o = liveness::open(std::span<const uint8_t>(buf.data(), std::min(*n, buf.size())), key_,
                            static_cast<uint32_t>(endpoints_.size()));
    if (o.ok && *n > liveness::kWireMax) o = liveness::Opened{};
    if (!o.ok) {
      ++stats_.bad[static_cast<size_t>(o.why)];
      continue;
    }
    det_->receive(o.msg, now, out);
  }
  if (now >= det_->next_due()) {
    det_->tick(now, out);
    ++work;
  }
  WIREUP_TRY(send_all(out));
  for (uint32_t d : det_->take_deaths()) deaths.push_back(d);
  return work;
}

void LivenessService::learn(uint32_t rank, Nanos now) {
  if (det_) det_->learn(rank, now);
}

Nanos LivenessService::next_due() const { return det_ ? det_->next_due() : Nanos::max(); }

}  // namespace wireup::capi
