"""A toy model family for tests/test_mutation.py: a counter that resets, and a separate
implementation of it (toyimpl/counter.py) whose mutants kmc mutate runs against the
conformance corpus declared here."""

from checker.model import Model, ModelFamily, Parameter, Preset, action
from checker.mutation import CommandCorpus, ConformCorpus, ConformRun, MutationGate, MutationTarget


class Counter(Model):
    name, version = "counter", "1"

    def __init__(self, limit):
        self.limit = limit

    def init_states(self):
        return [0]

    def actions(self, s):
        return [action("Inc")] if s < self.limit else [action("Reset")]

    def next_state(self, s, a):
        return s + 1 if a.name == "Inc" else 0

    def config(self):
        return {"limit": self.limit}


class CounterFamily(ModelFamily):
    name, version = "counter", "1"
    parameters = {"limit": Parameter("limit", 2, "the counter resets after this", 1, 5)}
    presets = {"two": Preset("two", "limit 2"), "three": Preset("three", "limit 3", {"limit": 3})}
    default_preset = "two"
    implementation = "toyimpl.counter:CounterImpl"
    mutation_targets = {"impl": MutationTarget(
        "toyimpl", ConformCorpus((ConformRun("two --probe", preset="two", probe=True),
                                  ConformRun("three", preset="three"))),
        equivalents="equivalent.txt",
        gate=MutationGate(6, 3, 100.0, ConformCorpus((ConformRun("two --probe", preset="two", probe=True),)))),
        # A command corpus that passes at once on the unmutated code and, on a mutant, writes
        # its pid to $TOY_PIDS and sleeps: what tests/test_mutation.py stops with SIGTERM.
        "slow": MutationTarget("toyimpl", CommandCorpus((
            "{python}", "-c", "import os, time; m = os.environ['KMC_MUTANT']; d = os.environ['TOY_PIDS'];\n"
            "if m != 'unmutated':\n"
            "    open(os.path.join(d, m), 'w').write(str(os.getpid())); time.sleep(600)")))}

    def build(self, config):
        return Counter(config["limit"])


FAMILY = CounterFamily()
