from checker.model import always


def pred(s):
    s.zk.controller >= -1


Mine = always('Mine', pred, 'a forgotten return')
