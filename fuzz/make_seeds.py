#!/usr/bin/env python3
"""Writes the seed corpus under fuzz/seeds/ (run from anywhere; files named by content).

http_response inputs: [flags, seed] + response bytes (flags bit 0 keeps the body, bit 1
is a HEAD request). tls_records inputs: [mode] + records as [type, length, flags, payload]
(see tlsio::fuzz::records_input), or [mode | 0x80, step] + raw wire bytes.
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


if __name__ == "__main__":
    main()
