// wireup_churn's command line: the options of wireup_churn.h from argv, every value checked.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "wireup_churn.h"

namespace wireup_churn {

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto num = [&](uint64_t& v) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      v = std::strtoull(argv[++i], &end, 10);
      return end != nullptr && *end == '\0';
    };
    uint64_t v = 0;
    if (a == "--ranks" && num(v) && v >= 2 && v <= 64) o.ranks = static_cast<uint32_t>(v);
    else if (a == "--cycles" && num(v) && v >= 1) o.cycles = v;
    else if (a == "--phase" && num(v) && v >= 1) o.phase = v;
    else if (a == "--restart-every" && num(v)) o.restart_every = v;
    else if (a == "--rss-growth-kib" && num(v)) o.rss_growth_kib = v;
    else if (a == "--config" && i + 1 < argc) o.config = argv[++i];
    else if (a == "--provider" && i + 1 < argc && (std::strcmp(argv[i + 1], "rdma") == 0 || std::strcmp(argv[i + 1], "sim") == 0))
      o.provider = argv[++i];
    else if (a == "--node" && num(v) && (v == 1 || v == 2)) o.node = static_cast<uint32_t>(v);
    else if (a == "--pair-dir" && i + 1 < argc) o.pair_dir = argv[++i];
    else if (a == "--pair-tag" && i + 1 < argc) o.pair_tag = argv[++i];
    else {
      std::fprintf(stderr,
                   "wireup_churn: bad argument '%s'\nusage: wireup_churn [--ranks 2..64] [--cycles C] [--phase P] "
                   "[--restart-every K] [--rss-growth-kib N] [--config FILE] [--provider rdma|sim] "
                   "[--node 1|2 --pair-dir D [--pair-tag T]]\n",
                   a.c_str());
      return false;
    }
  }
  if ((o.node != 0) != !o.pair_dir.empty()) {
    std::fprintf(stderr, "wireup_churn: --node and --pair-dir go together (the two nodes of scripts/vm/pair.sh)\n");
    return false;
  }
  if (o.node != 0 && (o.provider != "rdma" || o.ranks % 2 != 0)) {
    std::fprintf(stderr, "wireup_churn: --node needs --provider rdma and an even --ranks (%u)\n", o.ranks);
    return false;
  }
  return true;
}

}  // namespace wireup_churn
