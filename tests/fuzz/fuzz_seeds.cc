// Writes the seed corpora and the config dictionary for the fuzz targets from the real
// encoders and the parameter table, so the seeds follow the formats as they change:
//   fuzz_seeds OUT_DIR  ->  OUT_DIR/{private_data,address,liveness,config}/*, OUT_DIR/config.dict
// The shipped tuning files (config/*.toml, config/examples, tests/data/config) are passed to
// the config fuzzer as a second seed directory by scripts/fuzz.sh.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/params.h"
#include "provider/types.h"
#include "wireup/address.h"
#include "wireup/liveness_wire.h"
#include "wireup/mac.h"
#include "wireup/rail_address.h"
#include "fuzz_check.h"
#include "wireup/wire.h"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

namespace {

class SeedDir {
 public:
  explicit SeedDir(fs::path dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }
  void add(std::string_view name, const Bytes& b) {
    std::ofstream(dir_ / (std::string(name) + ".bin"), std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    ++count_;
  }
  void add(std::string_view name, std::string_view text) { add(name, Bytes(text.begin(), text.end())); }
  int count() const { return count_; }

 private:
  fs::path dir_;
  int count_ = 0;
};

template <size_t N>
Bytes bytes_of(const std::array<uint8_t, N>& a, size_t padded_to = 0) {
  Bytes b(a.begin(), a.end());
  if (b.size() < padded_to) b.resize(padded_to, 0);
  return b;
}

int private_data_seeds(const fs::path& out) {
  using wireup::RejectCode;
  using wireup::WireKind;
  SeedDir d(out / "private_data");
  // Sealed with the key fuzz_private_data opens with, so that mutations start from messages
  // that authenticate.
  const wireup::Wire w = *wireup::Wire::create(kFuzzJobKey, 3, 1);
  wireup::WireHeader h{.kind = WireKind::request, .src_rank = 3, .dst_rank = 7, .lane = 1, .attempt = 1,
                       .nonce = 0x1122334455667788ULL};
  // What the receiver sees: the whole CM field, zero padded (REQ 56, REP 196, REJ 148).
  d.add("req", bytes_of(w.seal(h)));
  d.add("req_56", bytes_of(w.seal(h), wireup::prov::private_data_limit::req_tcp));
  h.kind = WireKind::accept;
  d.add("rep_196", bytes_of(w.seal(h), wireup::prov::private_data_limit::rep));
  h.kind = WireKind::reject;
  for (uint16_t r = 0; r <= static_cast<uint16_t>(wireup::kLastRejectCode); ++r) {
    h.reason = static_cast<RejectCode>(r);
    d.add("rej_148_" + std::string(wireup::to_string(h.reason)),
          bytes_of(w.seal(h), wireup::prov::private_data_limit::rej));
  }
  h = {.kind = WireKind::request, .src_rank = ~0U, .dst_rank = ~0U, .lane = 0xffff, .attempt = ~0U,
       .nonce = ~0ULL};
  d.add("req_all_ones", bytes_of(w.seal(h)));
  Bytes b = bytes_of(w.seal(h));
  d.add("short_47", Bytes(b.begin(), b.begin() + 47));
  d.add("unsealed", bytes_of(wireup::encode(h)));
  d.add("empty", Bytes{});
  Bytes bad = b;
  bad[0] ^= 0xff;
  d.add("bad_magic", bad);
  bad = b, bad[4] = 1;
  d.add("bad_version", bad);
  bad = b, bad[5] = 6;
  d.add("bad_kind", bad);
  bad = b, bad[18] = 1;
  d.add("bad_reserved", bad);
  return d.count();
}

int address_seeds(const fs::path& out) {
  using wireup::prov::SockAddr;
  SeedDir d(out / "address");
  for (const char* text : {"10.0.0.1:7471", "255.255.255.255:65535", "0.0.0.0:1", "[::1]:7471",
                           "[fe80::1]:1", "[::ffff:10.0.0.1]:20000", "[2001:db8::ff00:42:8329]:65535"}) {
    auto a = SockAddr::parse(text);
    if (!a) {
      std::fprintf(stderr, "fuzz_seeds: %s: %s\n", text, a.error().message().c_str());
      continue;
    }
    d.add(std::string("ok_") + std::to_string(d.count()), wireup::encode_address(*a));
  }
  d.add("v4_port0", Bytes{1, 4, 0, 0, 10, 0, 0, 1});
  d.add("v4_short", Bytes{1, 4, 0x1d});
  d.add("v4_long", Bytes{1, 4, 0x1d, 0x2f, 10, 0, 0, 1, 0});
  d.add("v6_as_v4_length", Bytes{1, 6, 0x1d, 0x2f, 10, 0, 0, 1});
  d.add("version2", Bytes{2, 4, 0x1d, 0x2f, 10, 0, 0, 1});
  d.add("family5", Bytes{1, 5, 0x1d, 0x2f, 10, 0, 0, 1});
  // Format 2 (several rails, rail_address.h).
  const std::vector<wireup::RailAddress> rails = {{SockAddr::parse("10.0.1.1:7471").value(), 24},
                                                  {SockAddr::parse("[fd00::2]:9000").value(), 64}};
  d.add("rails_ok", wireup::encode_rails(rails));
  d.add("rails_count1", Bytes{2, 1, 4, 24, 0x1d, 0x2f, 10, 0, 0, 1});
  d.add("rails_prefix40", Bytes{2, 2, 4, 40, 0x1d, 0x2f, 10, 0, 0, 1, 4, 24, 0x1d, 0x2f, 10, 0, 0, 2});
  return d.count();
}

// The liveness service's datagrams (liveness_wire.h), sealed with the key fuzz_liveness opens
// with; the first byte of a seed is also what fuzz_liveness takes the rank count from ('W' + 1).
int liveness_seeds(const fs::path& out) {
  namespace lv = wireup::liveness;
  SeedDir d(out / "liveness");
  const wireup::MacKey key = *wireup::MacKey::derive(kFuzzJobKey);
  lv::Msg hb;
  hb.kind = lv::Kind::heartbeat;
  hb.from = 3;
  d.add("heartbeat", lv::seal(hb, key));
  hb.ndigest = lv::Msg::kMaxDigest;
  for (size_t i = 0; i < hb.ndigest; ++i) hb.digest[i] = uint32_t(10 + i);
  d.add("heartbeat_digest8", lv::seal(hb, key));
  lv::Msg suspect;
  suspect.kind = lv::Kind::suspect;
  suspect.from = 1;
  suspect.subject = 2;
  d.add("suspect", lv::seal(suspect, key));
  lv::Msg dead;
  dead.kind = lv::Kind::dead;
  dead.from = 5;
  dead.subject = 7;
  dead.root = 4;
  dead.mirror = 1;
  d.add("dead_mirror", lv::seal(dead, key));
  dead.subject = 200;  // beyond the rank count the seed's first byte gives
  d.add("dead_rank_out_of_range", lv::seal(dead, key));
  Bytes wrong_tag = lv::seal(suspect, key);
  wrong_tag.back() ^= 1;
  d.add("suspect_wrong_tag", wrong_tag);
  return d.count();
}

// A value as the environment would spell it, from the TOML literal of the default.
std::string env_spelling(std::string_view toml) {
  std::string s(toml);
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '[')) s = s.substr(1, s.size() - 2);
  std::string out;
  for (char c : s)
    if (c != '"') out += c;
  return out;
}

// libFuzzer dictionary syntax: "..." with \\, \" and \xNN escapes.
std::string dict_entry(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\', out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

int config_seeds(const fs::path& out) {
  namespace cfg = wireup::config;
  SeedDir d(out / "config");
  d.add("default_toml", cfg::default_toml());
  std::set<std::string> dict = {"[", "]", "[[", "]]", "=", "\"", "'", "\"\"\"", "'''", "#", ",", ".",
                                "\n", "{", "}", "true", "false", "0x", "0o", "0b", "ms", "s", "m", "inf",
                                "nan", "-", "+", "_", "e", "1979-05-27T07:32:00Z", "07:32:00",
                                "1979-05-27", "\\u", "\\U", "WIREUP_", "WIREUP_CONFIG", "WIREUP_LOG",
                                "WIREUP_VM_", std::string(1, '\0')};
  for (const cfg::Section& s : cfg::sections()) dict.insert("[" + std::string(s.name) + "]");
  for (const cfg::Param& p : cfg::params()) {
    const std::string sec(p.section), key(p.key), def(p.default_toml);
    dict.insert(key);
    dict.insert(p.name());
    dict.insert(p.env_name() + "=");
    for (const cfg::EnumChoice& c : p.choices) dict.insert(std::string(c.name));
    const std::string env = env_spelling(def);
    d.add("file_" + p.name(), "[" + sec + "]\n" + key + " = " + def + "\n");
    d.add("env_" + p.name(), std::string(1, '\0') + p.env_name() + "=" + env);
    d.add("api_" + p.name(), std::string(1, '\0') + p.name() + "=" + env);
  }
  d.add("mixed", "[engine]\nconnect_window = 64\n" + std::string(1, '\0') +
                     "WIREUP_ENGINE_CONNECT_WINDOW=32" + std::string(1, '\0') + "engine.lanes=2" +
                     std::string(1, '\0') + "WIREUP_LOG=debug" + std::string(1, '\0') + "HOME=/root");
  std::ofstream f(out / "config.dict");
  f << "# libFuzzer dictionary for fuzz_config, generated by fuzz_seeds from the parameter table\n";
  for (const std::string& w : dict) f << dict_entry(w) << "\n";
  return d.count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  const int n1 = private_data_seeds(out), n2 = address_seeds(out), n3 = liveness_seeds(out), n4 = config_seeds(out);
  std::printf("fuzz_seeds: %s: private_data %d, address %d, liveness %d, config %d seeds, config.dict\n", argv[1], n1, n2,
              n3, n4);
  return 0;
}
