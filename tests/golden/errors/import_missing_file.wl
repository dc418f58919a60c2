import "support/no-such-module.wl" as lib
