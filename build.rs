//! Compiles `proto/flightdeck.proto` with protox (pure Rust), so a fresh machine builds the
//! hub without a system `protoc`. The encoded descriptor set is kept for gRPC reflection.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/flightdeck.proto");
    let mut compiler = protox::Compiler::new(["proto"])?;
    compiler.include_imports(true).include_source_info(true).open_file("flightdeck.proto")?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("flightdeck_descriptor.bin"), compiler.encode_file_descriptor_set())?;
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(compiler.file_descriptor_set())?;
    Ok(())
}
