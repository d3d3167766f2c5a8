#!/usr/bin/env python3
"""Writes the sysfs layouts the host tests read (tests/unit/host_netdev_test.cc) and that
`wireup_info --sysfs DIR` explains. Each layout mirrors what the kernel shows:

  devices/<pci>/infiniband/<dev>/ports/<N>/{link_layer,state,gids/K,gid_attrs/{ndevs,types}/K}
  devices/<pci>/infiniband/<dev>/device -> ../../../<pci>   (the HCA's PCI function)
  devices/<pci>/net/<if>/{type,dev_port,dev_id,parent,pkey} (netdevs of that function)
  class/infiniband/<dev> -> ../../devices/<pci>/infiniband/<dev>
  class/net/<if>         -> ../../devices/<pci>/net/<if>    (virtual: devices/virtual/net/<if>)

and an `ifaddrs` file: "<interface> <address>" per line, what getifaddrs would return there.

Kernel facts they encode:
  - IPoIB sets dev_port = port - 1 (since 3.15; before, dev_id held it and there was no
    dev_port); on new kernels dev_id is 0x0 for every port of a dual-port HCA.
  - P_Key child interfaces (echo 0x8001 > ib0/create_child) have a `parent` file and their
    `pkey`; on newer kernels only the parent is tied to the HCA's PCI function (ipoib_parent_init
    sets its device and dev_port): a child is a virtual netdev (devices/virtual/net), as here.
  - ConnectX-3 (mlx4) is one PCI function with two ports: ib0 and ib1 sit side by side.
  - A RoCE GID's gid_attrs/ndevs names the netdev the GID belongs to: the bond for a LAG
    device (mlx5_bond_0), the VLAN interface for a VLAN's GIDs; unused entries cannot be read
    (EINVAL; absent here). types/K is "IB/RoCE v1" or "RoCE v2".
  - rxe has no PCI parent: no `device` link (a `parent` file names its netdev), RoCE v2 GIDs
    only, naming the netdev it was added on (layout `rxe` was read in the project's VM).
Run it from this folder; it replaces the layouts.
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def link(target, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


class Layout:
    def __init__(self, name):
        self.root = os.path.join(HERE, name)
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)
        self.addrs = []

    def device(self, dev, pci):
        """An RDMA device under a PCI function (pci=None: a software device such as rxe)."""
        base = f"devices/{pci}/infiniband/{dev}" if pci else f"devices/virtual/infiniband/{dev}"
        link(f"../../{base}", os.path.join(self.root, "class/infiniband", dev))
        if pci:
            link("../../../" + pci.split("/")[-1], os.path.join(self.root, base, "device"))
        return base

    def port(self, base, n, link_layer, gids=(), state="4: ACTIVE"):
        """gids: (index, gid, type, ndev) for the entries in use."""
        p = os.path.join(self.root, base, "ports", str(n))
        write(os.path.join(p, "link_layer"), link_layer)
        write(os.path.join(p, "state"), state)
        os.makedirs(os.path.join(p, "gid_attrs/ndevs"), exist_ok=True)
        os.makedirs(os.path.join(p, "gid_attrs/types"), exist_ok=True)
        for k, gid, typ, ndev in gids:
            write(os.path.join(p, "gids", str(k)), gid)
            write(os.path.join(p, "gid_attrs/types", str(k)), typ)
            write(os.path.join(p, "gid_attrs/ndevs", str(k)), ndev)

    def netdev(self, pci, ifname, type_, dev_port=None, dev_id="0x0", parent=None, pkey=None):
        d = f"devices/{pci}/net/{ifname}" if pci else f"devices/virtual/net/{ifname}"
        write(os.path.join(self.root, d, "type"), str(type_))
        write(os.path.join(self.root, d, "dev_id"), dev_id)
        if dev_port is not None:
            write(os.path.join(self.root, d, "dev_port"), str(dev_port))
        if parent:
            write(os.path.join(self.root, d, "parent"), parent)
        if pkey:
            write(os.path.join(self.root, d, "pkey"), pkey)
        link(f"../../{d}", os.path.join(self.root, "class/net", ifname))

    def addr(self, ifname, a):
        self.addrs.append(f"{ifname} {a}")

    def done(self, comment):
        write(os.path.join(self.root, "ifaddrs"), f"# {comment}\n" + "\n".join(self.addrs))


IB, ETH = 32, 1  # ARPHRD_INFINIBAND, ARPHRD_ETHER
V1, V2 = "IB/RoCE v1", "RoCE v2"

# A dual-port ConnectX-3 on InfiniBand, new kernel: ib0/ib1 by dev_port (dev_id 0x0 on both),
# a P_Key child of ib0, IPv4 on port 1, IPv6 only on port 2.
L = Layout("ib-connectx3-dual")
pci = "pci0000:00/0000:00:02.0/0000:05:00.0"
b = L.device("mlx4_0", pci)
L.port(b, 1, "InfiniBand")
L.port(b, 2, "InfiniBand")
L.netdev(pci, "ib0", IB, dev_port=0)
L.netdev(pci, "ib1", IB, dev_port=1)
L.netdev(None, "ib0.8001", IB, dev_port=0, parent="ib0", pkey="0x8001")  # virtual, see above
L.addr("ib0", "fe80::202:c903:a:1")
L.addr("ib0", "10.1.0.11")
L.addr("ib0.8001", "10.2.0.11")
L.addr("ib1", "fe80::202:c903:a:2")
L.addr("ib1", "fd00:1::11")
L.done("ib0 IPv4 (after its link-local IPv6); ib1 IPv6 only")

# The same HCA on a kernel before 3.15: no dev_port, the port is in dev_id.
L = Layout("ib-dev-id-only")
b = L.device("mlx4_0", pci)
L.port(b, 1, "InfiniBand")
L.port(b, 2, "InfiniBand")
L.netdev(pci, "ib0", IB, dev_id="0x0")
L.netdev(pci, "ib1", IB, dev_id="0x1")
L.addr("ib0", "10.1.0.12")
L.addr("ib1", "10.1.1.12")
L.done("old kernel: ports told apart by dev_id")

# RoCE: a bonded ConnectX-5 pair (LAG: one RDMA device whose GIDs name bond0); a ConnectX-5
# port whose IP lives on a VLAN (the GIDs of ens2f0 and of ens2f0.100); an IPv6-only port;
# a port with only link-local IPv6 (no usable address).
L = Layout("roce-vlan-bond")
lag = "pci0000:80/0000:80:01.0/0000:81:00.0"
b = L.device("mlx5_bond_0", lag)
L.port(b, 1, "Ethernet", [
    (0, "fe80:0000:0000:0000:0e42:a1ff:fe10:0001", V1, "bond0"),
    (1, "fe80:0000:0000:0000:0e42:a1ff:fe10:0001", V2, "bond0"),
    (2, "0000:0000:0000:0000:0000:ffff:c0a8:0a05", V1, "bond0"),
    (3, "0000:0000:0000:0000:0000:ffff:c0a8:0a05", V2, "bond0")])
L.netdev(lag, "ens1f0", ETH, dev_port=0)
L.netdev(lag.replace("81:00.0", "81:00.1"), "ens1f1", ETH, dev_port=0)
L.netdev(None, "bond0", ETH, dev_port=0)
L.addr("bond0", "192.168.10.5")
vlan = "pci0000:80/0000:80:02.0/0000:82:00.0"
b = L.device("mlx5_2", vlan)
L.port(b, 1, "Ethernet", [
    (0, "fe80:0000:0000:0000:0e42:a1ff:fe20:0001", V1, "ens2f0"),
    (1, "fe80:0000:0000:0000:0e42:a1ff:fe20:0001", V2, "ens2f0"),
    (2, "fe80:0000:0000:0000:0e42:a1ff:fe20:0001", V1, "ens2f0.100"),
    (3, "fe80:0000:0000:0000:0e42:a1ff:fe20:0001", V2, "ens2f0.100"),
    (4, "0000:0000:0000:0000:0000:ffff:0a64:0005", V1, "ens2f0.100"),
    (5, "0000:0000:0000:0000:0000:ffff:0a64:0005", V2, "ens2f0.100")])
L.netdev(vlan, "ens2f0", ETH, dev_port=0)
L.netdev(None, "ens2f0.100", ETH, dev_port=0)
L.addr("ens2f0", "fe80::e42:a1ff:fe20:1")
L.addr("ens2f0.100", "fe80::e42:a1ff:fe20:1")
L.addr("ens2f0.100", "10.100.0.5")
v6 = "pci0000:80/0000:80:03.0/0000:83:00.0"
b = L.device("mlx5_3", v6)
L.port(b, 1, "Ethernet", [
    (0, "fe80:0000:0000:0000:0e42:a1ff:fe30:0001", V1, "ens3f0"),
    (1, "fe80:0000:0000:0000:0e42:a1ff:fe30:0001", V2, "ens3f0"),
    (2, "fd00:0003:0000:0000:0000:0000:0000:0005", V1, "ens3f0"),
    (3, "fd00:0003:0000:0000:0000:0000:0000:0005", V2, "ens3f0")])
L.netdev(v6, "ens3f0", ETH, dev_port=0)
L.addr("ens3f0", "fe80::e42:a1ff:fe30:1")
L.addr("ens3f0", "fd00:3::5")
ll = "pci0000:80/0000:80:04.0/0000:84:00.0"
b = L.device("mlx5_4", ll)
L.port(b, 1, "Ethernet", [
    (0, "fe80:0000:0000:0000:0e42:a1ff:fe40:0001", V1, "ens4f0"),
    (1, "fe80:0000:0000:0000:0e42:a1ff:fe40:0001", V2, "ens4f0")])
L.netdev(ll, "ens4f0", ETH, dev_port=0)
L.addr("ens4f0", "fe80::e42:a1ff:fe40:1")
L.done("bond0 and the VLAN carry IPv4; ens3f0 IPv6 only; ens4f0 link-local only")

# Soft-RoCE as the project's VM has it (captured there: scripts/vm/run.sh, Debian 12 kernel):
# rxe0 under devices/virtual with no `device` link but a `parent` file naming its netdev,
# RoCE v2 GIDs only (rxe has no v1), on dummy0; unused GID entries read as zeros and their
# ndevs cannot be read (absent here).
L = Layout("rxe")
b = L.device("rxe0", None)
write(os.path.join(L.root, b, "parent"), "dummy0")
L.port(b, 1, "Ethernet", [
    (0, "fe80:0000:0000:0000:6c98:9eff:fe85:a7e3", V2, "dummy0"),
    (1, "0000:0000:0000:0000:0000:ffff:0a00:0001", V2, "dummy0")])
write(os.path.join(L.root, b, "ports/1/gids/2"), "0000:0000:0000:0000:0000:0000:0000:0000")
L.netdev(None, "dummy0", ETH, dev_port=0)
L.addr("dummy0", "10.0.0.1")
L.addr("dummy0", "fe80::6c98:9eff:fe85:a7e3")
L.done("the VM's dummy0 (scripts/vm)")
