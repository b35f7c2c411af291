"""dnsdist: the front-end (load balancer) in front of authoritative back-ends."""

from __future__ import annotations

from typing import Any

from dnslab.servers.base import Driver


class Dnsdist(Driver):
    kind = "dnsdist"

    def answer_healthy(self, rcode: str, options: dict[str, Any]) -> bool:
        # a front-end told to refuse everything is healthy when it refuses
        return rcode == "NOERROR" or (rcode == "REFUSED" and options.get("mode") == "refuse")

    def worker_options(self, count: int) -> dict[str, Any]:
        # a UDP listener thread per core (reusePort listeners on one address) and as many
        # TCP worker threads (dnsdist's default is 10)
        return {"listeners": count, "tcp_threads": count}

    def socket_buffer_options(self, size: int) -> dict[str, Any]:
        return {"udp_socket_buffers": size}

    def listener_options(self, cpus: list[int] | None) -> dict[str, Any]:
        if cpus is None:
            return {"listeners": 1, "listen_options": ""}
        # one reusePort listener per CPU, each pinned to it; big socket buffers, recvmmsg
        return {"listeners": len(cpus), "cpu_list": list(cpus),
                "listen_options": "reusePort=true, tcpListenQueueSize=4096",
                "udp_socket_buffers": 8388608, "recvmmsg_vector": 100}

    def refuse_all_options(self) -> dict[str, Any]:
        return {"mode": "refuse"}
