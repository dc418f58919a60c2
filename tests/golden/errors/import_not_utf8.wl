// The imported module is Latin-1, not UTF-8.
import "support/latin1.wl" as lib
