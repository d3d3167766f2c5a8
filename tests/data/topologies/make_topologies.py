#!/usr/bin/env python3
"""Writes the hand-made hwloc XML topologies the topo tests use (run from this folder).

The CPU/NUMA part comes from hwloc's synthetic backend (`lstopo --of xml -i ...`); the PCI
part is added here, shaped like real nodes, because no public XML has several NICs and GPUs
behind PCIe switches. Checked by `lstopo-no-graphics --input FILE`.

  2pkg-4nic-4gpu.xml  2 packages x 2 NUMA nodes (NPS2/SNC-like), 16 PUs per NUMA node. Behind
                      each NUMA node's root port sits one PCIe switch with a GPU (cudaN/nvmlN)
                      and a ConnectX-6 (mlx5_N) on two downstream ports: GPU N and mlx5_N share
                      switch N, which hangs off NUMA node N (package N // 2).
  2pkg-odd-nics.xml   2 packages, 1 NUMA node each. mlx5_0 (dual-port, port 1 DOWN, port 2
                      ACTIVE) under package 0; mlx5_1 hanging off the machine root, as hwloc
                      puts a device whose NUMA node the kernel does not know.
  2pkg-2x2port.xml    2 packages, 1 NUMA node each, two dual-port ConnectX-6 cards per package,
                      each port its own PCI function and device as mlx5 presents them:
                      mlx5_0/1 = 0000:21:00.0/.1 and mlx5_2/3 = 0000:22:00.0/.1 under package 0
                      (mlx5_3's port DOWN), mlx5_4..7 the same under package 1 (0x81, 0x82).

Run with file names to write only those (e.g. `./make_topologies.py 2pkg-2x2port.xml`).
"""
import subprocess
import xml.etree.ElementTree as ET

gp = [10000]


def obj(parent, type_, **attrs):
    gp[0] += 1
    e = ET.SubElement(parent, "object", {"type": type_, **attrs, "gp_index": str(gp[0])})
    return e


def info(parent, name, value):
    ET.SubElement(parent, "info", {"name": name, "value": value})


def bridge(parent, busid, sec, sub, depth, ids):
    return obj(parent, "Bridge", bridge_type="1-1", depth=str(depth),
               bridge_pci="0000:[%02x-%02x]" % (sec, sub), pci_busid=busid,
               pci_type="0604 [%s] [0000:0000] 00 00" % ids, pci_link_speed="31.507692")


def host_bridge(parent, first, last):
    return obj(parent, "Bridge", bridge_type="0-1", depth="0",
               bridge_pci="0000:[%02x-%02x]" % (first, last))


def gpu(parent, bus, n):
    d = obj(parent, "PCIDev", pci_busid="0000:%02x:00.0" % bus,
            pci_type="0302 [10de:20b0] [10de:134f] a1 00", pci_link_speed="31.507692")
    info(d, "PCIVendor", "NVIDIA Corporation")
    info(d, "PCIDevice", "GA100 [A100 SXM4 40GB]")
    obj(d, "OSDev", name="cuda%d" % n, subtype="CUDA", osdev_type="5")
    obj(d, "OSDev", name="nvml%d" % n, subtype="NVML", osdev_type="1")


def nic(parent, bus, n, port_states, function=0):
    d = obj(parent, "PCIDev", pci_busid="0000:%02x:00.%d" % (bus, function),
            pci_type="0207 [15b3:101b] [15b3:0007] 00 00", pci_link_speed="31.507692")
    info(d, "PCIVendor", "Mellanox Technologies")
    info(d, "PCIDevice", "MT28908 Family [ConnectX-6]")
    net = obj(d, "OSDev", name="ib%d" % n, osdev_type="2")
    info(net, "Port", "1")
    ofed = obj(d, "OSDev", name="mlx5_%d" % n, osdev_type="3")
    for port, state in port_states:
        info(ofed, "Port%dState" % port, str(state))


def synthetic(desc):
    xml = subprocess.run(["lstopo-no-graphics", "-i", desc, "--of", "xml", "-"],
                         check=True, capture_output=True, text=True).stdout
    root = ET.fromstring(xml)
    # Drop the Synthetic backend info so the file reads like a real machine's export.
    machine = root.find("object")
    for i in list(machine.findall("info")):
        machine.remove(i)
    # Infos must precede child objects in hwloc's XML.
    machine.insert(0, ET.Element("info", {"name": "Backend", "value": "Linux"}))
    return root


def write(root, path):
    ET.indent(root)
    with open(path, "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n')
        f.write(ET.tostring(root, encoding="unicode"))
        f.write("\n")


def four_nic_four_gpu():
    root = synthetic("pack:2 group:2 [numa] core:8 pu:2")
    groups = [g for g in root.iter("object") if g.get("type") == "Group"]
    assert len(groups) == 4
    for n, group in enumerate(groups):
        base = [0x10, 0x40, 0x90, 0xc0][n]
        hb = host_bridge(group, base, base + 4)
        root_port = bridge(hb, "0000:%02x:01.0" % base, base + 1, base + 4, 1, "8086:347a")
        upstream = bridge(root_port, "0000:%02x:00.0" % (base + 1), base + 2, base + 4, 2, "10b5:c010")
        gpu(bridge(upstream, "0000:%02x:00.0" % (base + 2), base + 3, base + 3, 3, "10b5:c010"), base + 3, n)
        nic(bridge(upstream, "0000:%02x:01.0" % (base + 2), base + 4, base + 4, 3, "10b5:c010"), base + 4, n,
            [(1, 4)])
    write(root, "2pkg-4nic-4gpu.xml")


def odd_nics():
    root = synthetic("pack:2 [numa] core:4 pu:2")
    machine = root.find("object")
    packages = [p for p in machine.findall("object") if p.get("type") == "Package"]
    hb = host_bridge(packages[0], 0x00, 0x01)
    nic(bridge(hb, "0000:00:02.0", 0x01, 0x01, 1, "8086:2f04"), 0x01, 0, [(1, 1), (2, 4)])
    hb = host_bridge(machine, 0x80, 0x81)
    nic(bridge(hb, "0000:80:02.0", 0x81, 0x81, 1, "8086:2f04"), 0x81, 1, [(1, 4)])
    write(root, "2pkg-odd-nics.xml")


def dual_port_cards():
    root = synthetic("pack:2 [numa] core:8 pu:2")
    machine = root.find("object")
    packages = [p for p in machine.findall("object") if p.get("type") == "Package"]
    n = 0
    for pkg, base in zip(packages, [0x20, 0x80]):
        hb = host_bridge(pkg, base, base + 2)
        for slot in (1, 2):
            port = bridge(hb, "0000:%02x:%02x.0" % (base, slot), base + slot, base + slot, 1, "8086:2030")
            for function in (0, 1):
                # mlx5_3 (package 0, second card, second function) has its link down.
                nic(port, base + slot, n, [(1, 1 if n == 3 else 4)], function)
                n += 1
    write(root, "2pkg-2x2port.xml")


if __name__ == "__main__":
    import sys
    writers = {"2pkg-4nic-4gpu.xml": four_nic_four_gpu, "2pkg-odd-nics.xml": odd_nics,
            "2pkg-2x2port.xml": dual_port_cards}
    for name in sys.argv[1:] or writers:
        writers[name]()
