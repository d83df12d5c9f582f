from checker.model import always


def pred(s):
    return None


Mine = always('Mine', pred, 'fuzzed')
