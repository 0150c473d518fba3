def solution(xs):
    """Return how many values are negative."""
    count = 0
    for x in xs:
        if x < 0:
            count = count + 1
    return count
