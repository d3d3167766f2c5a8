// Drives many engines in one process over one fabric (rdma: one device, many listeners;
// sim: many virtual nodes) and checks what they built.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "qp/factory.h"
#include "wireup/engine.h"
#include "wireup/options.h"

namespace wireup::etest {

class EngineFabric {
 public:
  virtual ~EngineFabric() = default;
  virtual std::string name() const = 0;
  virtual prov::Provider& provider(uint32_t node) = 0;
  virtual prov::SockAddr address(uint32_t node) = 0;  // listen address, port 0
  virtual bool has_data_path() const = 0;
};

// One fabric with `nodes` nodes; an error says why it cannot exist here.
Result<std::unique_ptr<EngineFabric>> make_engine_fabric(uint32_t nodes);

struct Rank {
  std::unique_ptr<qp::DefaultQpFactory> factory;  // outlives the engine's QPs
  std::unique_ptr<Engine> engine;
};

struct Job {
  std::vector<Rank> ranks;
  Job() = default;
  Job(Job&&) = default;
  Job& operator=(Job&&) = default;
  ~Job();
};

using OptionsHook = std::function<void(EngineOptions&)>;
// Wraps rank `rank`'s QP factory (e.g. to make some QP creations fail).
using FactoryHook = std::function<qp::QpFactory(uint32_t rank, qp::QpFactory inner)>;

// Creates `n` engines (rank i on node i % nodes), exchanges addresses, starts them.
// `caps`: those of the QPs each rank's DefaultQpFactory makes.
Result<Job> make_job(EngineFabric& f, uint32_t n, uint32_t lanes, const OptionsHook& hook = {},
                     const FactoryHook& factory_hook = {}, prov::QpCaps caps = prov::QpCaps{8, 8, 1, 1, 0});

// Progresses every engine until all are done or `bound` (provider clock) passes.
Status run_to_completion(EngineFabric& f, Job& job, Nanos bound);

// Progresses every engine (but those of `skip`, and ranks without one) until `until()` holds
// or `bound` (provider clock) passes; on demand, where done() says nothing about what the
// peers will still ask.
Status run_until(EngineFabric& f, Job& job, const std::function<bool()>& until, Nanos bound,
                 const std::vector<uint32_t>& skip = {});

// Every established (peer, lane) has a matching one on the peer, with crossed QPNs.
void expect_consistent(const Job& job, uint32_t lanes, const std::vector<uint32_t>& dead = {});

// A SEND both ways on every connection (rdma only: needs a data path).
void expect_messages_flow(Job& job);

bool in_vm();

}  // namespace wireup::etest

#define WIREUP_REQUIRE_ENGINE_FABRIC(var, nodes)                                   \
  auto var##_result_ = ::wireup::etest::make_engine_fabric(nodes);                 \
  if (!var##_result_) {                                                            \
    if (::wireup::etest::in_vm()) FAIL() << var##_result_.error().message();       \
    GTEST_SKIP() << "SKIPPED LOUDLY: " << var##_result_.error().message();         \
  }                                                                                \
  auto& var = *var##_result_.value()
