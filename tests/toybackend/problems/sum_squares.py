def solution(xs):
    """Return the sum of the squares of xs."""
    total = 0
    index = 0
    while index < len(xs):
        value = xs[index]
        square = 0
        for _ in range(abs(value)):
            square = square + abs(value)
        total = total + square
        index = index + 1
    return total
