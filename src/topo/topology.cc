// Loading hwloc topologies and reading device placement out of them.
#include "topo/topology.h"

#include <hwloc.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/log.h"

namespace wireup::topo {
namespace {

CpuSet from_bitmap(hwloc_const_bitmap_t b) {
  CpuSet s;
  if (b == nullptr || hwloc_bitmap_weight(b) < 0) return s;  // weight < 0: infinite set
  unsigned i;
  hwloc_bitmap_foreach_begin(i, b) { s.set(i); }
  hwloc_bitmap_foreach_end();
  return s;
}

std::string busid(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", static_cast<unsigned>(a.domain), a.bus, a.dev, a.func);
  return buf;
}

bool is_gpu_osdev(hwloc_obj_t o) {
  return o->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU || o->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC;
}

hwloc_obj_t package_of(hwloc_topology_t t, hwloc_obj_t anc) {
  // The package holding every CPU local to the device; none when the device hangs off a
  // machine root that spans several packages.
  for (hwloc_obj_t pkg = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PACKAGE, nullptr); pkg != nullptr;
       pkg = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PACKAGE, pkg))
    if (hwloc_bitmap_isincluded(anc->cpuset, pkg->cpuset)) return pkg;
  return nullptr;
}

Placement locate(hwloc_topology_t t, hwloc_obj_t obj, std::string_view name) {
  Placement p;
  hwloc_obj_t pci = obj->type == HWLOC_OBJ_PCI_DEVICE ? obj : hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PCI_DEVICE, obj);
  if (pci == nullptr) {
    p.unplaced_why = "hwloc shows " + std::string(name) +
                     " with no PCI function above it (a software device such as rxe or siw)";
    return p;
  }
  p.placed = true;
  p.pci_busid = busid(pci->attr->pcidev);
  for (hwloc_obj_t o = pci->parent; o != nullptr && hwloc_obj_type_is_io(o->type); o = o->parent)
    if (o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
      p.bridges.push_back({o->gp_index, busid(o->attr->bridge.upstream.pci)});

  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, obj);
  // hwloc hangs I/O off the machine root when the kernel does not say where it is
  // (numa_node = -1); on a multi-NUMA machine that is "unknown", not "near every node".
  const bool locality_unknown = anc->parent == nullptr && hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE) > 1;
  if (locality_unknown) {
    WIREUP_LOG(debug, "%s: hwloc attaches it to the whole machine; NUMA locality unknown", p.pci_busid.c_str());
  } else {
    unsigned node;
    hwloc_bitmap_foreach_begin(node, anc->nodeset) { p.numa_nodes.push_back(node); }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    if (cpus != nullptr && hwloc_cpuset_from_nodeset(t, cpus, anc->nodeset) == 0) p.numa_cpus = from_bitmap(cpus);
    hwloc_bitmap_free(cpus);
  }
  if (hwloc_obj_t pkg = package_of(t, anc)) {
    p.package = static_cast<int>(pkg->os_index != HWLOC_UNKNOWN_INDEX ? pkg->os_index : pkg->logical_index);
    p.package_cpus = from_bitmap(pkg->cpuset);
  }
  return p;
}

// IB port states as hwloc's "Port<N>State" info carries them (enum ibv_port_state).
const char* ib_port_state(int s) {
  switch (s) {
    case 1: return "DOWN";
    case 2: return "INIT";
    case 3: return "ARMED";
    case 4: return "ACTIVE";
    case 5: return "ACTIVE_DEFER";
    default: return "NOP";
  }
}

Result<hwloc_topology_t> make(const std::string& origin) {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0)
    return Error::from_errno("hwloc_topology_init", errno, "for " + origin);
  // Important I/O only: PCI functions of network, GPU and storage class and the bridges
  // above them, which is all the ranking reads; the full PCI tree costs time on big nodes.
  if (hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0) {
    const int err = errno;
    hwloc_topology_destroy(t);
    return Error::from_errno("hwloc_topology_set_io_types_filter", err, "for " + origin);
  }
  return t;
}

Status finish_load(hwloc_topology_t t, const std::string& origin) {
  if (hwloc_topology_load(t) == 0) return Status::ok();
  const int err = errno;
  hwloc_topology_destroy(t);
  return Error::from_errno("hwloc_topology_load", err, "for " + origin);
}

}  // namespace

void Topology::Deleter::operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }

Topology::Topology(hwloc_topology* t, std::string origin, bool live)
    : topo_(t), origin_(std::move(origin)), live_(live) {}

Result<Topology> Topology::load_live() {
  const std::string origin = "this machine";
  Result<hwloc_topology_t> t = make(origin);
  if (!t) return t.error();
  WIREUP_TRY(finish_load(*t, origin));
  return Topology(*t, origin, true);
}

Result<Topology> Topology::load_xml(const std::string& path) {
  // hwloc's own message for a missing file is "Invalid argument"; say what is wrong instead.
  if (!std::ifstream(path))
    return Error::from_errno("hwloc topology XML", errno, path + ": cannot read the file");
  Result<hwloc_topology_t> t = make(path);
  if (!t) return t.error();
  if (hwloc_topology_set_xml(*t, path.c_str()) != 0) {
    const int err = errno;
    hwloc_topology_destroy(*t);
    return Error::from_errno("hwloc_topology_set_xml", err, path);
  }
  WIREUP_TRY(finish_load(*t, path + " (is it an hwloc XML topology?)"));
  return Topology(*t, path, false);
}

Placement Topology::place_device(std::string_view name, std::string_view pci_busid) const {
  hwloc_topology_t t = topo_.get();
  hwloc_obj_t found = nullptr;
  for (hwloc_obj_t o = hwloc_get_next_osdev(t, nullptr); o != nullptr && found == nullptr;
       o = hwloc_get_next_osdev(t, o))
    if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && o->name != nullptr && name == o->name) found = o;
  // By name first: bus ids can be ambiguous (one shared XML has two functions at 0000:04:00.0).
  if (found == nullptr && !pci_busid.empty())
    found = hwloc_get_pcidev_by_busidstring(t, std::string(pci_busid).c_str());
  Placement p;
  if (found == nullptr) {
    p.unplaced_why = "hwloc knows no OpenFabrics device named " + std::string(name) +
                     (pci_busid.empty() ? " and no PCI bus id was given (as for software devices such as rxe)"
                                        : " and no PCI device at " + std::string(pci_busid));
    return p;
  }
  return locate(t, found, name);
}

Result<Placement> Topology::place_gpu(std::string_view id) const {
  hwloc_topology_t t = topo_.get();
  hwloc_obj_t found = nullptr;
  if (id.find(':') != std::string_view::npos) {
    found = hwloc_get_pcidev_by_busidstring(t, std::string(id).c_str());
  } else {
    for (hwloc_obj_t o = hwloc_get_next_osdev(t, nullptr); o != nullptr && found == nullptr;
         o = hwloc_get_next_osdev(t, o))
      if (is_gpu_osdev(o) && o->name != nullptr && id == o->name) found = o;
  }
  if (found != nullptr) {
    Placement p = locate(t, found, id);
    if (p.placed) return p;
    return Error::make(ErrorCode::invalid_argument, "place_gpu",
                       "GPU " + std::string(id) + " in " + origin_ + " has no PCI function to place it by");
  }
  std::string known;
  for (const std::string& g : gpu_names()) known += (known.empty() ? "" : ", ") + g;
  return Error::make(ErrorCode::invalid_argument, "place_gpu",
                     "no GPU " + std::string(id) + " in " + origin_ + " (GPU devices there: " +
                         (known.empty() ? "none" : known) + "; a PCI bus id like 0000:84:00.0 works too)");
}

std::vector<FabricDevice> Topology::fabric_devices() const {
  std::vector<FabricDevice> out;
  hwloc_topology_t t = topo_.get();
  for (hwloc_obj_t o = hwloc_get_next_osdev(t, nullptr); o != nullptr; o = hwloc_get_next_osdev(t, o)) {
    if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || o->name == nullptr) continue;
    FabricDevice d;
    d.name = o->name;
    if (hwloc_obj_t pci = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PCI_DEVICE, o)) d.pci_busid = busid(pci->attr->pcidev);
    for (unsigned i = 0; i < o->infos_count; ++i) {
      int port = 0, state = 0, used = 0;
      // "Port1State" = "4". sscanf's count cannot tell "Port1State" from "Port1LID" (the
      // literal after %d is not a conversion), so require %n to reach the end of the name.
      if (std::sscanf(o->infos[i].name, "Port%dState%n", &port, &used) == 1 && used > 0 &&
          o->infos[i].name[used] == '\0' && std::sscanf(o->infos[i].value, "%d", &state) == 1)
        d.port_states[port] = state;
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<Candidate> Topology::candidates(int port) const {
  std::vector<Candidate> out;
  for (const FabricDevice& d : fabric_devices()) {
    Candidate c;
    c.name = d.name;
    c.pci_busid = d.pci_busid;
    c.where = place_device(d.name, d.pci_busid);
    if (auto it = d.port_states.find(port); it != d.port_states.end()) {
      c.port_text = ib_port_state(it->second);
      c.port = it->second == 4 || it->second == 5 ? PortStatus::active : PortStatus::inactive;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::string> Topology::gpu_names() const {
  std::vector<std::string> out;
  hwloc_topology_t t = topo_.get();
  for (hwloc_obj_t o = hwloc_get_next_osdev(t, nullptr); o != nullptr; o = hwloc_get_next_osdev(t, o))
    if (is_gpu_osdev(o) && o->name != nullptr) out.emplace_back(o->name);
  return out;
}

CpuSet Topology::machine_cpus() const { return from_bitmap(hwloc_topology_get_topology_cpuset(topo_.get())); }

Result<CpuSet> Topology::process_binding() const {
  if (!live_)
    return Error::make(ErrorCode::invalid_argument, "process_binding",
                       "the topology comes from " + origin_ + ", not this machine; give the CPUs explicitly");
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (set == nullptr) return Error::from_errno("hwloc_bitmap_alloc", ENOMEM);
  Result<CpuSet> out = CpuSet{};
  if (hwloc_get_cpubind(topo_.get(), set, HWLOC_CPUBIND_PROCESS) != 0)
    out = Error::from_errno("hwloc_get_cpubind", errno, "reading this process's CPU binding");
  else
    out = from_bitmap(set);
  hwloc_bitmap_free(set);
  return out;
}

}  // namespace wireup::topo
