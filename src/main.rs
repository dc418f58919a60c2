fn main() {
    std::process::exit(wlrun::run(std::env::args_os()));
}
