"""The rule a parameter declares (dnslab/param_rules.py): what a rule's text may say, what each
form accepts and refuses, and how a refusal reads (one line: the parameter, the value, what
it may be)."""

from __future__ import annotations

from typing import Any

import pytest

from dnslab import topology
from dnslab.errors import LabError
from dnslab.param_rules import Context, RuleError, check, describe, parse


def refused(rule: str, value: Any, params: dict[str, Any] | None = None,
            lab: str | None = None) -> str:
    """The message refusing `value` for parameter `x`, or "" when it is accepted."""
    context = Context(params={"x": value, **(params or {})},
                      topology=topology.load(lab) if lab else None)
    try:
        check("x", value, parse(rule), context)
    except LabError as exc:
        assert "\n" not in exc.message
        return exc.message
    return ""


@pytest.mark.parametrize("rule, good, bad", [
    ("int >= 1", [1, 7, "12"], [0, -1, 1.5, True, "abc", "", [1], float("inf")]),
    ("int 512..65535", [512, 65535], [511, 65536]),
    ("number > 0, < 1", [0.5, 0.999], [0, 1, float("nan"), float("inf"), -0.1]),
    ("number 0..1", [0, 0.3, 1], [1.01, -0.01]),
    ("0 or int 512..65535", [0, 4096], [1, 511, -1]),
    ("auto or int >= 0 or empty", ["auto", "5", 5, ""], ["-1", "many", "auto2"]),
    ("bool", [True, False], [1, "yes"]),
    ("one of max, p99", ["max", "p99"], ["p95", "", "MAX"]),
    ("each one of tcp, tls", [["tcp"], ["tls", "tcp"]], [[], ["quic"], ["tcp", "quic"], "tcp"]),
    ("each int >= 1", [[1, 2]], [[], [0], [1, -3]]),
    ("cpus or empty", ["", "0", "0-1,3"], ["abc", "3-1", "-1", "0," * 200]),
    ("dns name", ["victim.test.", "a-b.example"], ["a..b", "x" * 64 + ".test", "a b", "."]),
    ("port range", ["1024 65535", "20000 20249"], ["5 3", "0 10", "1 70000", "1024", "a b"]),
    ("query", ["www.example.test A", "x.test NAPTR"], ["www.example.test", "a b c"]),
    ("text", ["anything"], ["x" * 201]),
    ("map", [{}, {"a": 1}], ["a", [1]]),
    ("sysctls", [{"net.ipv4.tcp_tw_reuse": 1}], [{"bad key": 1}, {"net.ipv4.x": [1]}, "a"]),
    ("wan", [{"root": {"delay_ms": 20, "loss_pct": 0.5}}],
     [{"root": {"delay_ms": -1}}, {"root": {"loss_pct": 101}}, {"root": {"nosuch": 1}},
      {"root": 5}]),
    ("each one of dnsperf, dnsload", [{"udp": "dnsperf"}], [{"udp": "nosuch"}, {}]),
])
def test_each_form_accepts_what_it_says_and_refuses_the_rest(rule: str, good: list[Any],
                                                              bad: list[Any]) -> None:
    for value in good:
        assert refused(rule, value) == "", (rule, value)
    for value in bad:
        assert refused(rule, value).startswith("X="), (rule, value)


def test_a_bound_may_name_another_parameter_and_says_its_value() -> None:
    assert refused("int >= 0, < step_s", 3, {"step_s": 4}) == ""
    assert refused("int >= 0, < step_s", 4, {"step_s": 4}) == \
        "X=4: must be an integer >= 0 and < STEP_S (4)"
    assert parse("int >= stair_start").refers_to == ("stair_start",)
    # the other parameter's own rule speaks for a value that is no number
    assert refused("int < step_s", 3, {"step_s": "abc"}) == ""


def test_the_lab_gives_a_role_its_choices() -> None:
    assert refused("secondary kind", "knot", lab="xfr") == ""
    assert refused("secondary kind", "unbound", lab="xfr") == \
        "X=unbound: 'unbound' is not a choice (lab 'xfr' has no such secondary)"
    assert refused("secondary kind", "unbound") == "", "no lab: nothing to ask"
    assert refused("server node", "client", lab="reference").startswith("X=client: 'client'")


def test_a_server_kind_is_any_kind_the_lab_runs_or_a_version_of_one() -> None:
    for good in ("unbound", "dnsdist", "bind", "kresd", "unbound@1.26", "dnsdist@1.9",
                 "bind@9.20", "bind@9.16", "knot@3.4"):
        assert refused("server kind", good, lab="reference") == "", good
    assert refused("server kind", "unbound@1.99", lab="reference").startswith(
        "X=unbound@1.99: 'unbound@1.99' is not a version the lab offers")
    assert refused("server kind", "pdns", lab="reference") == \
        "X=pdns: 'pdns' is not a choice (lab 'reference' has no such server node)"
    assert refused("server kind", "tools", lab="reference").startswith("X=tools:"), \
        "the client's kind is no server"
    # without a lab: every kind that runs a daemon, and their versions
    assert refused("server kind", "recursor@5.4") == ""
    assert refused("server kind", "nosuch").startswith("X=nosuch:")


def test_a_server_kinds_version_gets_a_node_in_the_role_of_its_kind() -> None:
    from dnslab.experiment_spec import load_spec, versioned_topology

    spec = load_spec("transport-cost")
    reference = topology.load("reference")
    more = versioned_topology(spec, {"servers": ["unbound@1.26", "bind@9.20", "dnsdist@1.9",
                                                 "kresd", "nsd"]}, reference)
    added = {n.name: (n.image_key, n.role) for n in more.nodes.values()
             if n.name not in reference.nodes}
    assert added == {"resolver126": ("unbound@1.26", "resolver"),
                     "sec-bind920": ("bind@9.20", "secondary"),  # BIND's secondary, not its primary
                     "frontend19": ("dnsdist@1.9", "frontend")}


def test_a_refusal_is_one_short_line_with_a_hint() -> None:
    context = Context(params={"zones": "9" * 5000}, experiment="xfr-30k-zones",
                      defaults={"zones": 30000})
    with pytest.raises(LabError) as caught:
        check("zones", "9" * 5000, parse("int 1..1000000"), context)
    assert caught.value.message == ("ZONES=999999999999999999999999999999... (5000 characters): "
                                    "must be an integer from 1 to 1000000")
    assert caught.value.hint == ("the default is ZONES=30000; "
                                 "make show EXP=xfr-30k-zones: every rule")


@pytest.mark.parametrize("rule, words", [
    ("int >= 1", "an integer >= 1"),
    ("number 0..0.98", "a number from 0 to 0.98"),
    ("each one of before, after", "one or more (comma separated) of before, after"),
    ("0 or int 512..65535", "0, or an integer from 512 to 65535"),
    ("one of auto, seed or port range or empty",
     'one of auto, seed, or a port range "LOW HIGH" within 1-65535, or empty'),
    ("each int >= 1", "one or more (comma separated) integers >= 1"),
    ("each server kind", "one or more (comma separated) server kinds of the lab or versions of "
                         "them"),
])
def test_a_rule_in_words(rule: str, words: str) -> None:
    assert describe(parse(rule)) == words


@pytest.mark.parametrize("text", ["", "integer >= 1", "int >= one two", "int 5..1", "each each int",
                                  "each auto", "one of a,,b", "int ~ 3"])
def test_a_text_that_is_no_rule_says_so(text: str) -> None:
    with pytest.raises(RuleError):
        parse(text)
