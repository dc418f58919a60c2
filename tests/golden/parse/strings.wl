// Escapes and interpolation, including nested strings inside `${}`.
param a = "quote \" backslash \\ newline \n tab \t return \r dollar \$ done"
param b = "host_${n}"
param c = "${a}${b}"
param d = "outer ${ "inner ${ x + 1 } end" } tail"
param e = "postgres://u:${env("PW", "pw")}@127.0.0.1:5432/db"
param f = ""
param g = "multi
line"
param h = "it costs $5 and {braces} are fine"
