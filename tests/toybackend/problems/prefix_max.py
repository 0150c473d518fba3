def solution(xs):
    """Return the running maximum: out[i] == max(xs[:i + 1])."""
    out = []
    for i in range(len(xs)):
        best = xs[0]
        for j in range(i + 1):
            if xs[j] > best:
                best = xs[j]
        out.append(best)
    return out
