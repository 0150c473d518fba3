def solution(xs):
    """Return the number of pairs i < j with xs[i] + xs[j] == 0."""
    count = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            if xs[i] + xs[j] == 0:
                count += 1
    return count
