#!/usr/bin/env python3
"""Writes the seed corpus under fuzz/seeds/ (run from anywhere; files named by content).

http_response inputs: [flags, seed] + response bytes (flags bit 0 keeps the body, bit 1
is a HEAD request). tls_records inputs: [mode] + records as [type, length, flags, payload]
(see tlsio::fuzz::records_input), or [mode | 0x80, step] + raw wire bytes. hpack and
h2_frames inputs: see net::h2::fuzz::hpack and ::frames.
"""
import hashlib
import os

HERE = os.path.dirname(os.path.abspath(__file__))

HTTP = [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"bcd\"}",
    b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: 1\r\n\r\n",
    b"HTTP/1.0 200 OK\r\n\r\nhello",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxy",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\n0\n\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nuntil close",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\nab",
    b"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 3\r\n\r\nabc",
    b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
    b"\x15\x03\x03\x00\x02\x02\x28",
    b"hello there\r\n\r\n",
    b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:8200/v1/secret/data/foo\r\nContent-Length: 2\r\n\r\n{}",
    b"HTTP/1.1 308 Permanent Redirect\r\nLocation: /a\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 32\r\n\r\n{\"errors\":[\"Vault is sealed\"]}\r\n",
]


def write(target, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def rec(typ, payload, flags=0, *extra):
    return bytes([typ, len(payload), flags]) + payload + bytes(extra)


def main():
    for i, r in enumerate(HTTP):
        write("http_response", bytes([1, i]) + r)
        write("http_response", bytes([0, 200 + i]) + r)
    write("http_response", bytes([3, 7]) + HTTP[0])
    ticket = bytes([4, 0, 0, 20]) + bytes(range(20))
    key_update = bytes([24, 0, 0, 1, 1])
    for mode in range(8):
        if mode % 4 == 3:
            continue
        write("tls_records", bytes([mode]) + rec(23, b"HTTP/1.1 200 OK\r\n", 4)
              + rec(23, b"Content-Length: 2\r\n\r\nok", 8, 5))
        write("tls_records", bytes([mode]) + rec(23, b"0123456789abcdef" * 8, 1)
              + rec(21, b"\x01\x00"))
        write("tls_records", bytes([mode]) + rec(22, ticket[:9], 4) + rec(22, ticket[9:])
              + rec(23, b"data"))
        write("tls_records", bytes([mode]) + rec(22, key_update) + rec(23, b"after", 2, 3, 1))
        write("tls_records", bytes([mode]) + rec(21, b"\x02\x28"))
        write("tls_records", bytes([mode]) + rec(0, b"ok\x17\x00\x00") + rec(23, b""))
        write("tls_records", bytes([mode | 0x80, 3]) + b"\x17\x03\x03\x00\x20" + bytes(32))
    write("tls_records", bytes([0x84, 0]) + b"HTTP/1.1 400 Bad Request\r\n")
    h2_seeds()


# What nginx 1.22 sent a raw h2c client asking four streams (two kv reads, a `return 444`
# location and a 404): its SETTINGS, WINDOW_UPDATE and ACK, then per stream HEADERS
# (server, date, content-type and content-length Huffman-coded with incremental
# indexing) and DATA, and RST_STREAM PROTOCOL_ERROR for the 444.
NGINX_H2C = bytes.fromhex(
    "000012040000000000000300000080000400010000000500ffffff0000040800000000007fff0000000000040100000000000030010400000001887689aa6355e580ae212e1f6196e4593e940094be52282009c502edc65bb820298b46ff5f87497ca58ae819aa5c01320000020001000000016f6b000030010400000003887689aa6355e580ae212e1f6196e4593e940094be52282009c502edc65bb820298b46ff5f87497ca58ae819aa5c01320000020001000000036f6b00000403000000000500000001000030010400000007887689aa6355e580ae212e1f6196e4593e940094be52282009c502edc65bb820298b46ff5f87497ca58ae819aa5c01320000020001000000076f6b"
)
# RFC 7541 appendix C.3 (requests, raw), C.4 (requests, Huffman), C.6 (responses, Huffman).
RFC_BLOCKS = [
    ["828684410f7777772e6578616d706c652e636f6d", "828684be58086e6f2d6361636865",
     "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565"],
    ["828684418cf1e3c2e5f23a6ba0ab90f4ff", "828684be5886a8eb10649cbf",
     "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf"],
    ["488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
     "4883640effc1c0bf"],
]


def frames_of(b):
    """The frames of b, each as bytes."""
    out, i = [], 0
    while i + 9 <= len(b):
        n = int.from_bytes(b[i:i + 3], "big")
        out.append(b[i:i + 9 + n])
        i += 9 + n
    return out


def feed(data):
    return bytes([1, len(data) >> 8, len(data) & 0xff]) + data


def h2_seeds():
    for seq in RFC_BLOCKS:
        blocks = [bytes.fromhex(h) for h in seq]
        write("hpack", bytes([0]) + b"".join(bytes([len(x)]) + x for x in blocks))
    fs = frames_of(NGINX_H2C)
    headers = [f[9:] for f in fs if f[3] == 1]
    write("hpack", bytes([0]) + b"".join(bytes([len(x)]) + x for x in headers[:2]))
    write("hpack", bytes([2, 3, 0x3f, 0xe1, 0x1f]) + bytes([len(headers[0])]) + headers[0])
    fields = [(b":status", b"200"), (b"server", b"nginx/1.22.1"),
              (b"content-length", b"147"), (b"date", b"Wed, 02 Dec 2026 17:00:00 GMT"),
              (b"x-vault-raw", bytes(range(0, 256, 7)))]
    for mode in (1, 3):
        write("hpack", bytes([mode]) + b"".join(
            bytes([len(n)]) + n + bytes([len(v)]) + v for n, v in fields * 3))
    hello = b"".join(fs[:3])
    rest = b"".join(fs[3:])
    starts = bytes([0, 0]) * 4
    for m in (3, 0x83):
        write("h2_frames", bytes([m, 7]) + feed(hello) + starts + feed(rest))
    # A body sent, a stream cancelled, then everything in one read.
    write("h2_frames", bytes([1, 9]) + feed(hello) + bytes([0, 2, 3, 0, 4, 0]) + feed(rest))
    # Each frame on its own, streams started after the SETTINGS.
    seq = feed(fs[0]) + starts + b"".join(feed(f) for f in fs[1:])
    write("h2_frames", bytes([3, 1]) + seq)


if __name__ == "__main__":
    main()
