from checker.model import always


def pred(s):
    return 'yes'


Mine = always('Mine', pred, 'fuzzed')
