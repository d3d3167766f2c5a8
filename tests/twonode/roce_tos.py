#!/usr/bin/env python3
"""roce_tos.py PCAP --tos N [--require KIND]...: the IP TOS byte (DSCP and ECN) of every RoCE v2
packet in a capture, by kind and direction, checked against N.

The capture is an Ethernet pcap of UDP port 4791 (tcpdump -w). Each packet is named from its
Base Transport Header: an RC opcode for the data path (SEND_ONLY, RDMA_WRITE_ONLY, ...), or, for
the UD packets to QP 1 that carry the communication manager's MADs, "CM " and the MAD's
attribute (REQ, REP, RTU, DREQ, ...). Prints one line per kind and direction with the TOS values
seen; exits 1 if any packet's TOS is not N, or if a required kind is missing. A required kind
"NAME" must appear at least once; "NAME@both" in both directions.
"""
import argparse
import struct
import sys
from collections import defaultdict

ROCE_V2_PORT = 4791

# IBTA 1.4 vol 1, table 38 (BTH opcodes): the RC ones and UD SEND.
RC_OPCODES = {
    0x00: "SEND_FIRST", 0x01: "SEND_MIDDLE", 0x02: "SEND_LAST", 0x03: "SEND_LAST_IMM",
    0x04: "SEND_ONLY", 0x05: "SEND_ONLY_IMM", 0x06: "RDMA_WRITE_FIRST", 0x07: "RDMA_WRITE_MIDDLE",
    0x08: "RDMA_WRITE_LAST", 0x09: "RDMA_WRITE_LAST_IMM", 0x0A: "RDMA_WRITE_ONLY",
    0x0B: "RDMA_WRITE_ONLY_IMM", 0x0C: "RDMA_READ_REQUEST", 0x0D: "RDMA_READ_RESPONSE_FIRST",
    0x0E: "RDMA_READ_RESPONSE_MIDDLE", 0x0F: "RDMA_READ_RESPONSE_LAST",
    0x10: "RDMA_READ_RESPONSE_ONLY", 0x11: "ACKNOWLEDGE", 0x12: "ATOMIC_ACKNOWLEDGE",
    0x13: "COMPARE_SWAP", 0x14: "FETCH_ADD", 0x16: "SEND_LAST_INV", 0x17: "SEND_ONLY_INV",
}
UD_SEND_ONLY, UD_SEND_ONLY_IMM = 0x64, 0x65
BTH_BYTES, DETH_BYTES = 12, 8
MGMT_CLASS_CM = 0x07
# IBTA 1.4 vol 1, table 103 (CM attributes).
CM_ATTRS = {0x0001: "ClassPortInfo", 0x0010: "REQ", 0x0011: "MRA", 0x0012: "REJ", 0x0013: "REP",
            0x0014: "RTU", 0x0015: "DREQ", 0x0016: "DREP", 0x0017: "SIDR_REQ", 0x0018: "SIDR_REP",
            0x0019: "LAP", 0x001A: "APR"}
DEFAULT_REQUIRED = ["CM REQ", "CM REP", "CM RTU", "SEND_ONLY@both", "RDMA_WRITE_ONLY@both",
                    "RDMA_READ_REQUEST@both", "RDMA_READ_RESPONSE_ONLY@both", "ACKNOWLEDGE"]


def packets(path):
    """(ip header, udp payload) of each IPv4 UDP 4791 packet in an Ethernet pcap."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f"{path}: not a pcap file ({len(data)} bytes)")
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        raise ValueError(f"{path}: not a pcap file (magic {magic.hex()})")
    linktype = struct.unpack(end + "I", data[20:24])[0]
    if linktype != 1:
        raise ValueError(f"{path}: link type {linktype}, expected 1 (Ethernet)")
    off = 24
    while off + 16 <= len(data):
        caplen = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        frame = data[off + 16:off + 16 + caplen]
        off += 16 + caplen
        if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 17 or len(ip) < ihl + 8:
            continue
        dport = struct.unpack(">H", ip[ihl + 2:ihl + 4])[0]
        if dport == ROCE_V2_PORT:
            yield ip, ip[ihl + 8:]


def kind(bth):
    """The packet's name from its BTH (and, for a MAD, from the MAD header)."""
    if len(bth) < BTH_BYTES:
        return "SHORT"
    opcode = bth[0]
    if opcode in RC_OPCODES:
        return RC_OPCODES[opcode]
    dest_qp = int.from_bytes(bth[5:8], "big")
    if opcode in (UD_SEND_ONLY, UD_SEND_ONLY_IMM):
        mad = bth[BTH_BYTES + DETH_BYTES + (4 if opcode == UD_SEND_ONLY_IMM else 0):]
        if dest_qp == 1 and len(mad) >= 18 and mad[1] == MGMT_CLASS_CM:
            attr = struct.unpack(">H", mad[16:18])[0]
            return "CM " + CM_ATTRS.get(attr, f"attr 0x{attr:04x}")
        return f"UD to QP {dest_qp}"
    return f"opcode 0x{opcode:02x}"


def tos_text(t):
    return f"0x{t:02x} (DSCP {t >> 2}, ECN {t & 3})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pcap")
    ap.add_argument("--tos", type=lambda s: int(s, 0), required=True, help="the TOS byte every packet must carry")
    ap.add_argument("--require", action="append", help="a kind that must appear (NAME or NAME@both); "
                    "default: " + ", ".join(DEFAULT_REQUIRED))
    ap.add_argument("--prefix", default="roce-tos:", help="what each output line starts with")
    a = ap.parse_args()

    seen = defaultdict(lambda: defaultdict(int))  # (kind, src, dst) -> tos -> count
    for ip, payload in packets(a.pcap):
        src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
        seen[(kind(payload), src, dst)][ip[1]] += 1

    bad = 0
    for (k, src, dst), by_tos in sorted(seen.items(), key=lambda x: (not x[0][0].startswith("CM"), x[0])):
        n = sum(by_tos.values())
        tos = ", ".join(f"{tos_text(t)} x{c}" for t, c in sorted(by_tos.items()))
        wrong = sum(c for t, c in by_tos.items() if t != a.tos)
        bad += wrong
        print(f"{a.prefix} {src} -> {dst}  {k:<26} {n:4d} packet(s)  tos {tos}{'  WRONG' if wrong else ''}")
    missing = []
    for req in a.require or DEFAULT_REQUIRED:
        name, _, how = req.partition("@")
        directions = {(s, d) for (k, s, d) in seen if k == name}
        if not directions or (how == "both" and len({s for s, _ in directions}) < 2):
            missing.append(req)
    total = sum(sum(t.values()) for t in seen.values())
    if bad:
        print(f"{a.prefix} FAILED: {bad} of {total} packets without tos {tos_text(a.tos)}")
    if missing:
        print(f"{a.prefix} FAILED: not captured: {', '.join(missing)}")
    if not bad and not missing:
        print(f"{a.prefix} all {total} RoCE v2 packets carry tos {tos_text(a.tos)}")
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main())
