//! vblast's executable: everything is in the library (`vblast::main`).

fn main() {
    std::process::exit(vblast::main());
}
