// Precedence: or < and < not < comparisons/in < .. < + - < * / % < unary minus.
param a = 1 + 2 * 3 - 4 / 2 % 3
param b = (1 + 2) * 3
param c = -x * -(y + 1)
param d = not a == b and c != d or e < f
param e = x in [1, 2, 3] and not y in 0..10
param f = 0..hosts - 1
param g = a <= b or a >= b or a > b
param h = --1
param i = not not true
param j = tsbs.cpu.hostname
param k = uniform(0, 100)
param l = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
param m = seq()
param n = pick(["a", "b",],)
param o = start + 1h * 2
