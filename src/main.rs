fn main() {
    std::process::exit(pgbolt::app::main());
}
