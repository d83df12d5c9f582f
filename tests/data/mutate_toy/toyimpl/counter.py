"""The toy counter's implementation: `resets` is state the projection never shows (its
mutants are equivalent, see equivalent.txt), and `debug` is code no corpus runs."""


class CounterImpl:
    ignored = {}

    def __init__(self, config):
        self.limit = config["limit"]
        self.n = 0
        self.resets = 0

    def enabled(self, a):
        if a.name == "Inc":
            return self.n < self.limit
        return self.n >= self.limit

    def apply(self, a):
        if a.name == "Inc":
            self.n += 1
        else:
            self.n = 0
            self.resets = self.resets + 1

    def observe(self):
        return self.n

    def debug(self):
        return max(self.n, 0)
