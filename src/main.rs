fn main() {
    std::process::exit(pgbolt::cli::main());
}
