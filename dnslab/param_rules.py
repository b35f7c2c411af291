"""What a parameter may be: the one short rule an experiment file declares for each of its
parameters (`rules:`, beside `params:`), parsed here and checked against every value before
the run starts anything (`experiment_spec.check_params`).

A rule is one or more forms joined by ` or `:

    int [BOUNDS]       an integer (not a bool)
    number [BOUNDS]    a finite number
    bool               true or false
    text               at most 200 characters
    one of A, B, ...   one of these words
    <role> kind        a server kind the lab has a node of in that role (`secondary kind`)
    server kind        a server kind the lab has a node of in any role but the client's,
                       or an offered version of one (`bind@9.20`: a run adds its node)
    server node        a node of the lab that is not its client
    profile            a sysctl profile (experiments/profiles/)
    cpus               a cpu-set (`0-2,5`)
    dns name           a domain name
    port range         "LOW HIGH", within 1-65535
    query              a query line, "NAME TYPE"
    map                a mapping (a server's own options: its own checker judges them)
    sysctls            a mapping of sysctl keys to values
    wan                node -> link shape ({delay_ms, jitter_ms, loss_pct}: dnslab.wan)
    each FORM          a list of at least one element, each one FORM (of a map: each value)
    a literal          a number, a word (`auto`), or `empty` ("", [] or {})

BOUNDS are comparisons joined by commas, `>= 1`, `> 0, < 1`, or a closed range `512..65535`;
a comparison's operand may be another parameter (`int >= stair_start`, `< step_s`): what the
experiment forbids in combination. E.g. `stair_step: int >= 1`, `truncating: number 0..1`,
`servers: each secondary kind`, `udp_payload: 0 or int 512..65535`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from dnslab.errors import LabError
from dnslab.topology import Topology

MAX_TEXT = 200  # characters of any text value (a domain name: 253)
MAX_DNS_NAME = 253
SHOWN = 40  # characters of a value a message repeats
_BOUND = re.compile(r"^(>=|<=|>|<)\s*(\S+)$")
_RANGE = re.compile(r"^(-?[\d.e+]+)\s*\.\.\s*(-?[\d.e+]+)$")
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
_LABEL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?$")
_SYSCTL = re.compile(r"^[a-z0-9_]+(\.[A-Za-z0-9_-]+)+$")
_RDTYPE = re.compile(r"^[A-Z][A-Z0-9]{0,9}$")
WORD_FORMS = {"bool", "text", "profile", "cpus", "map", "sysctls", "wan", "query"}
PHRASE_FORMS = {"dns name", "port range", "server node", "server kind"}
NUMERIC = {"int", "number"}


class RuleError(ValueError):
    """A rule's text that is no rule (the experiment file's mistake, not the user's)."""


@dataclass(frozen=True)
class Bound:
    op: str
    operand: float | str  # a number, or the name of another parameter

    def limit(self, params: Mapping[str, Any]) -> float | None:
        """The number the value is compared with (None: the other parameter is no number)."""
        if isinstance(self.operand, str):
            other = params.get(self.operand)
            return float(other) if _is_number(other) else None
        return self.operand

    def holds(self, value: float, params: Mapping[str, Any]) -> bool:
        limit = self.limit(params)
        if limit is None:
            return True  # the other parameter's own rule says what is wrong with it
        return {">=": value >= limit, ">": value > limit, "<=": value <= limit,
                "<": value < limit}[self.op]

    def words(self, params: Mapping[str, Any] | None = None) -> str:
        if isinstance(self.operand, str):
            other = self.operand.upper()
            if params is not None and self.operand in params:
                other += f" ({shown(params[self.operand])})"
            return f"{self.op} {other}"
        return f"{self.op} {_number_text(self.operand)}"


@dataclass(frozen=True)
class Form:
    """One alternative of a rule."""

    kind: str  # int, number, bool, text, one of, role, profile, server node, cpus, ...
    bounds: tuple[Bound, ...] = ()
    words: tuple[str, ...] = ()  # one of: the choices; role: the role; literal: the text
    element: Form | None = None  # each: what every element is

    @property
    def literal(self) -> Any:
        """A literal's value as the parameter holds it ("" for `empty`)."""
        text = self.words[0]
        if text == "empty":
            return ""
        return _to_number(text) if _is_number_text(text) else text


@dataclass(frozen=True)
class Rule:
    text: str
    forms: tuple[Form, ...]
    # the parameters its bounds compare with
    refers_to: tuple[str, ...] = field(default=())


def parse(text: str) -> Rule:
    """A rule from its text; RuleError saying what is wrong with it."""
    text = str(text).strip()
    if not text:
        raise RuleError("an empty rule")
    forms = tuple(_parse_form(part.strip()) for part in text.split(" or "))
    refers = tuple(dict.fromkeys(
        b.operand for f in forms for b in (*f.bounds, *(f.element.bounds if f.element else ()))
        if isinstance(b.operand, str)))
    return Rule(text, forms, refers)


def _parse_form(text: str, inside_each: bool = False) -> Form:
    if text.startswith("each "):
        if inside_each:
            raise RuleError(f"{text!r}: a list of lists")
        return Form("each", element=_parse_form(text[5:].strip(), inside_each=True))
    if text.startswith("one of "):
        words = tuple(w.strip() for w in text[7:].split(","))
        if not all(words):
            raise RuleError(f"{text!r}: an empty choice")
        return Form("one of", words=words)
    head, _, rest = text.partition(" ")
    if head in NUMERIC:
        return Form(head, bounds=_parse_bounds(rest.strip(), text))
    if text in WORD_FORMS:
        return Form(text)
    if text in PHRASE_FORMS:
        return Form(text)
    if rest == "kind" and _NAME.match(head):
        return Form("role", words=(head,))
    if not inside_each and " " not in text and (_is_number_text(text) or _NAME.match(text)):
        return Form("literal", words=(text,))
    raise RuleError(f"{text!r} is no rule (int, number, bool, text, one of ..., <role> kind, "
                    "profile, server node, cpus, dns name, port range, query, map, sysctls, "
                    "wan, each ..., a literal)")


def _parse_bounds(text: str, whole: str) -> tuple[Bound, ...]:
    if not text:
        return ()
    bounds: list[Bound] = []
    for part in (p.strip() for p in text.split(",")):
        ranged = _RANGE.match(part)
        if ranged:
            low, high = _to_number(ranged.group(1)), _to_number(ranged.group(2))
            if low > high:
                raise RuleError(f"{whole!r}: the range {part} is empty")
            bounds += [Bound(">=", low), Bound("<=", high)]
            continue
        found = _BOUND.match(part)
        if found is None:
            raise RuleError(f"{whole!r}: {part!r} is no bound (>= 1, > 0, < step_s, 0..1)")
        operand = found.group(2)
        if _is_number_text(operand):
            bounds.append(Bound(found.group(1), _to_number(operand)))
        elif _NAME.match(operand):
            bounds.append(Bound(found.group(1), operand))
        else:
            raise RuleError(f"{whole!r}: {operand!r} is neither a number nor a parameter")
    return tuple(bounds)


# --- checking ------------------------------------------------------------------------------

@dataclass
class Context:
    """What a value is checked against besides its rule: every parameter (for bounds that
    name another), the run's lab (for `<role> kind`, `server node`), and for the hint the
    experiment's name and defaults."""

    params: Mapping[str, Any]
    topology: Topology | None = None
    experiment: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    profiles: list[str] | None = None  # the sysctl profiles (read once, when first needed)

    def known_profiles(self) -> list[str]:
        if self.profiles is None:
            from dnslab.sysctl import known_profiles

            self.profiles = known_profiles()
        return self.profiles


@dataclass(frozen=True)
class Choice:
    """A value that is not among the choices (or none was chosen)."""

    message: str
    allowed: list[str]
    # a version of a kind the lab has that the manifest does not offer (`bind@9.14`)
    version: bool = False


def check(key: str, value: Any, rule: Rule, context: Context) -> None:
    """A one-line LabError when `value` follows none of the rule's forms: the parameter, the
    value and what it may be."""
    problems = [_problem(form, value, context) for form in rule.forms]
    if any(p is None for p in problems):
        return
    raise refusal(key, value, rule, context, problems)


def refusal(key: str, value: Any, rule: Rule, context: Context,
            problems: list[str | Choice | None] | None = None) -> LabError:
    """The one line that refuses `value` (a value of another type too: `abc` for a count)."""
    problems = problems or []
    name = key.upper()
    given = f"{name}={shown(value)}"
    choice = next((p for p in problems if isinstance(p, Choice)), None)
    offered = next((p for p in problems if isinstance(p, Choice) and p.version), None)
    if offered is not None:  # a kind the lab has, in a version it does not offer
        return LabError(f"{given}: {offered.message}",
                        hint=f"{name} from: {', '.join(offered.allowed)}")
    if choice is not None and len(rule.forms) == 1:
        # the right shape with a bad choice, or none: which one, and the choices
        return LabError(f"{given}: {choice.message}",
                        hint=f"{name} from: {', '.join(choice.allowed) or '(none)'}")
    detail = next((p for p in problems if isinstance(p, str) and p), "")
    default = shown(context.defaults[key]) if key in context.defaults else None
    hint = f"the default is {name}={default}" if default is not None \
        and len(default) < SHOWN else ""
    if context.experiment:
        hint += ("; " if hint else "") + f"make show EXP={context.experiment}: every rule"
    return LabError(f"{given}: must be {describe(rule, context)}"
                    + (f" ({detail})" if detail else ""), hint=hint or None)


def _problem(form: Form, value: Any, context: Context) -> str | Choice | None:
    """None when `value` follows the form; else "" or a detail (a list's bad element), or a
    Choice (not one of the choices)."""
    kind = form.kind
    if kind == "literal":
        if form.words[0] == "empty":
            return None if value in ("", [], {}, None) else ""
        wanted = form.literal
        if _is_number(wanted) and _is_number(value):
            return None if value == wanted else ""
        return None if str(value) == str(wanted) else ""
    if kind == "each":
        assert form.element is not None
        items = list(value.values()) if isinstance(value, dict) else value
        if not isinstance(items, list):
            return ""
        if not items:
            allowed = _choices(form.element, context)
            return Choice("choose at least one", allowed) if allowed is not None else ""
        for item in items:
            problem = _problem(form.element, item, context)
            if isinstance(problem, Choice):
                return problem
            if problem is not None:
                return problem or f"{shown(item)} is not"
        return None
    if isinstance(value, list | dict) and kind not in ("map", "sysctls", "wan"):
        return ""
    if kind in NUMERIC:
        return _numeric_problem(form, value, context)
    if kind == "bool":
        return None if isinstance(value, bool) else ""
    if isinstance(value, str) and len(value) > (MAX_DNS_NAME if kind == "dns name"
                                                else MAX_TEXT):
        return ""
    allowed = _choices(form, context)
    if allowed is not None:
        if str(value) in allowed:
            return None
        if kind == "role" and context.topology is not None:
            version = _version_problem(str(value), form.words[0], context.topology)
            if version is not False:
                return version
        if kind == "server kind":
            version = _offered_problem(str(value), set(_server_kinds(context.topology)))
            if version is not False:
                return version
        where = ""
        if kind == "role" and context.topology is not None:
            where = f" (lab {context.topology.name!r} has no such {form.words[0]})"
        elif kind in ("server node", "server kind") and context.topology is not None:
            where = f" (lab {context.topology.name!r} has no such server node)"
        return Choice(f"{shown(value)!r} is not a choice{where}", allowed)
    if kind in ("role", "server node"):
        return None  # no lab to ask
    if kind == "text":
        return None if isinstance(value, str) else ""
    if kind == "cpus":
        return _cpus_problem(value)
    if kind == "dns name":
        return _dns_name_problem(value)
    if kind == "port range":
        return _port_range_problem(value)
    if kind == "query":
        name, _, rdtype = str(value).strip().partition(" ")
        return None if _dns_name_problem(name) is None and _RDTYPE.match(rdtype.strip()) \
            else ""
    if kind == "map":
        return None if isinstance(value, dict) else ""
    if kind == "sysctls":
        return _sysctls_problem(value)
    if kind == "wan":
        return _wan_problem(value)
    raise AssertionError(f"form {kind!r} has no check")  # parse() knows no other


def _version_problem(value: str, role: str, topo: Any) -> str | Choice | None | bool:
    """A kind's version for a node of `role`: None when the lab has the node or can add one
    (`Topology.with_versions`: a version the manifest offers of a kind the lab has in that
    role); a Choice naming the versions offered when the version is not one; False when
    the value names no kind of that role at all (the caller's list of choices says)."""
    if value in topo.nodes_by_server(role):
        return None
    return _offered_problem(value, {n.server for n in topo.nodes_where(role=role)})


def _offered_problem(value: str, kinds: set[str]) -> Choice | None | bool:
    """None when `value` is a version the manifests offer of one of `kinds`, a Choice naming
    the offered ones when it names one of them in a version not offered, False otherwise."""
    from dnslab.servers.manifest import ManifestError, kind_version

    try:
        found = kind_version(value)
    except ManifestError as exc:
        kind = value.partition("@")[0]
        if kind not in kinds or "offers" not in str(exc):
            return False
        return Choice(f"{value!r} is not a version the lab offers", _offered(kind),
                      version=True)
    return None if found.kind in kinds else False


def _server_kinds(topo: Any) -> list[str]:
    """The kinds of the lab's server nodes (every role but the client's), in file order;
    without a lab, every kind the lab knows that runs a daemon."""
    from dnslab.servers import driver, kinds

    if topo is None:
        return [k for k in kinds() if driver(k).runs_daemon]
    return list(dict.fromkeys(n.server for n in _server_nodes(topo)))


def _server_nodes(topo: Any) -> list[Any]:
    from dnslab.servers import driver

    return [n for n in topo.nodes.values()
            if n.role not in (None, "client") and driver(n.server).runs_daemon]


def _server_kind_choices(topo: Any) -> list[str]:
    """The versions of the lab's server nodes (a kind alone for its default version), then
    every other version the manifests offer of their kinds."""
    from dnslab.servers.manifest import short_name

    kinds = _server_kinds(topo)
    have = kinds if topo is None else list(dict.fromkeys(
        short_name(n.image_key) for n in _server_nodes(topo)))
    return have + [v for kind in kinds for v in _offered(kind) if v not in have]


def _role_choices(topo: Any, role: str) -> list[str]:
    """The versions of the lab's nodes in `role` (a kind alone for its default version), then
    every other version the manifests offer of those kinds (`kind@version`: a run adds a node
    for one, Topology.with_versions)."""
    from dnslab.servers.manifest import short_name

    have = list(topo.nodes_by_server(role))
    kinds = dict.fromkeys(key.partition("@")[0] for key in have)
    return [short_name(k) for k in have] + [v for kind in kinds for v in _offered(kind)
                                            if v not in have]


def _offered(kind: str) -> list[str]:
    from dnslab.servers.manifest import manifest

    return [f"{kind}@{v}" for v in manifest(kind).versions]


def _choices(form: Form, context: Context) -> list[str] | None:
    """What a choice form may be (None: no list of choices, or none known here)."""
    if form.kind == "one of":
        return list(form.words)
    if form.kind == "profile":
        return context.known_profiles()
    if form.kind == "role" and context.topology is not None:
        return _role_choices(context.topology, form.words[0])
    if form.kind == "server kind":
        return _server_kind_choices(context.topology)
    if form.kind == "server node" and context.topology is not None:
        return [n.name for n in context.topology.nodes.values() if n.role != "client"]
    return None


def _numeric_problem(form: Form, value: Any, context: Context) -> str | None:
    if isinstance(value, str) and _is_number_text(value.strip()):
        value = _to_number(value.strip())
    if not _is_number(value) or not math.isfinite(float(value)):
        return ""
    if form.kind == "int" and not float(value).is_integer():
        return ""
    if all(bound.holds(float(value), context.params) for bound in form.bounds):
        return None
    return ""


def _cpus_problem(value: Any) -> str | None:
    from dnslab.cpus import parse as parse_cpus

    try:
        parse_cpus(str(value))
    except LabError:
        return ""
    return None


def _dns_name_problem(value: Any) -> str | None:
    text = str(value)
    labels = text.removesuffix(".").split(".")
    if not text or text == "." or len(text) > MAX_DNS_NAME:
        return ""
    if any(len(label) > 63 or not _LABEL.match(label) for label in labels):
        return ""
    return None


def _port_range_problem(value: Any) -> str | None:
    try:
        low, high = (int(p) for p in str(value).split())
    except ValueError:
        return ""
    return None if 1 <= low <= high <= 65535 else ""


def _sysctls_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return ""
    for key, item in value.items():
        if not _SYSCTL.match(str(key)):
            return f"{shown(key)!r} is not a sysctl key"
        if isinstance(item, list | dict) or item is None or len(str(item)) > MAX_TEXT:
            return f"{key}: {shown(item)!r} is not a sysctl value"
    return None


def _wan_problem(value: Any) -> str | None:
    from dnslab import wan

    if not isinstance(value, dict):
        return ""
    for node, shape in value.items():
        try:
            wan.parse(str(node), shape)
        except LabError as exc:
            return exc.message
    return None


# --- in words ------------------------------------------------------------------------------

def describe(rule: Rule, context: Context | None = None, values: bool = True) -> str:
    """What the rule allows, in words ("an integer >= 1", "one of max, p99"); with a
    context, the lab's choices too and (`values`) the values of the parameters its bounds
    name."""
    return ", or ".join(_describe_form(f, context, values=values) for f in rule.forms)


def _describe_form(form: Form, context: Context | None, plural: bool = False,
                   values: bool = True) -> str:
    params = context.params if context is not None and values else None
    lab = context.topology.name if context is not None and context.topology else ""
    kind = form.kind
    if kind == "literal":
        return form.words[0]
    if kind == "each":
        assert form.element is not None
        return "one or more (comma separated) " + _describe_form(form.element, context,
                                                                 plural=True)
    if kind in NUMERIC:
        noun = ("integers" if plural else "an integer") if kind == "int" \
            else ("numbers" if plural else "a number")
        lows = [b for b in form.bounds if b.op in (">=", ">")]
        highs = [b for b in form.bounds if b.op in ("<=", "<")]
        if (len(lows) == 1 and len(highs) == 1 and lows[0].op == ">=" and highs[0].op == "<="
                and not isinstance(lows[0].operand, str)
                and not isinstance(highs[0].operand, str)):
            return (f"{noun} from {_number_text(lows[0].operand)} to "
                    f"{_number_text(highs[0].operand)}")
        return " ".join([noun, " and ".join(b.words(params) for b in form.bounds)]).strip()
    allowed = _choices(form, context) if context is not None else None
    listed = f" ({', '.join(allowed)})" if allowed else ""
    if kind == "one of":
        return ("of " if plural else "one of ") + ", ".join(form.words)
    if kind == "role":
        where = f"lab {lab}" if lab else "the lab"
        return (f"{form.words[0]} kinds of {where}" if plural
                else f"a {form.words[0]} kind of {where}") + listed
    if kind == "server node":
        return ("server nodes of the lab" if plural else "a server node of the lab") + listed
    if kind == "server kind":
        return ("server kinds of the lab or versions of them" if plural
                else "a server kind of the lab or a version of one") + listed
    if kind == "profile":
        return ("sysctl profiles" if plural else "a sysctl profile") \
            + (listed or " (experiments/profiles/)")
    return {
        "bool": "true or false",
        "text": f"text of at most {MAX_TEXT} characters",
        "cpus": "cpu-sets" if plural else "a cpu-set such as 0-2,5",
        "dns name": "domain names" if plural else "a domain name",
        "port range": 'a port range "LOW HIGH" within 1-65535',
        "query": 'query lines "NAME TYPE"' if plural else 'a query line "NAME TYPE"',
        "map": "a map such as {key: value}",
        "sysctls": "a map of sysctl keys to values",
        "wan": "a map of node to {delay_ms, jitter_ms, loss_pct}",
    }[kind]


# --- small helpers -------------------------------------------------------------------------

def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_number_text(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return bool(re.match(r"^[-+]?(\d|\.\d|inf|nan)", text.strip().lower()))


def _to_number(value: Any) -> int | float:
    if _is_number(value):
        return value
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


def _number_text(value: float | str) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def shown(value: Any) -> str:
    """A value as it is typed (KEY=VALUE), cut short when long."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, list):
        text = ",".join(str(v) for v in value)
    elif isinstance(value, dict):
        text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    else:
        text = str(value)
    if len(text) > SHOWN:
        return f"{text[:SHOWN - 10]}... ({len(text)} characters)"
    return text
