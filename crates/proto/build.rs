//! Compiles every `.proto` file under the workspace's top-level `proto/` directory.
//!
//! The directory is walked rather than listed so a service only drops its files into
//! `proto/fairdeal/<service>/v1/` and they are compiled, exported (through the generated
//! `_includes.rs` module tree) and added to the descriptor set served by gRPC reflection.
//! `protoc` comes from the `protoc-bin-vendored` crate so a machine with only cargo builds.
//!
//! Every service's gRPC client and server modules are generated too, each behind a
//! `#[cfg(feature = "client")]` / `#[cfg(feature = "server")]` attribute, so the crate's
//! features (not the build script) decide whether tonic is compiled in.

use std::io;
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let proto_root = manifest_dir.join("../../proto").canonicalize()?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);

    let mut protos = Vec::new();
    collect_protos(&proto_root, &mut protos)?;
    // A stable order keeps the generated files and the descriptor set reproducible.
    protos.sort();

    // Cargo re-runs the script when anything under the directory changes, including a new
    // file, which is what keeps the generated code from drifting from its source.
    println!("cargo:rerun-if-changed={}", proto_root.display());
    for proto in &protos {
        println!("cargo:rerun-if-changed={}", proto.display());
    }

    let mut config = prost_build::Config::new();
    config
        .protoc_executable(protoc_bin_vendored::protoc_bin_path()?)
        // Maps become BTreeMaps: their entries are encoded in key order, which the event
        // hash chain relies on (deterministic bytes) and which makes Debug output stable.
        .btree_map(["."])
        // `prost::Name` on every message: the event store names an event by the full
        // protobuf name of its payload.
        .enable_type_names()
        .include_file("_includes.rs");

    let well_known = protoc_bin_vendored::include_path()?;
    // Clients and servers are always generated, and compiled only with the crate feature
    // of the same name: the messages alone need no transport (tonic), so pure crates such as
    // `fairdeal-event` depend on this crate without pulling it in.
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        // Malformed messages are the caller's fault (INVALID_ARGUMENT), not tonic's default
        // INTERNAL: see `codec.rs`.
        .codec_path("crate::codec::Codec")
        .client_mod_attribute(".", r#"#[cfg(feature = "client")]"#)
        .server_mod_attribute(".", r#"#[cfg(feature = "server")]"#)
        .file_descriptor_set_path(out_dir.join("fairdeal_descriptor.bin"))
        .compile_with_config(config, &protos, &[proto_root, well_known])?;
    Ok(())
}

/// Appends every `*.proto` file below `dir` (recursively) to `out`.
fn collect_protos(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_protos(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "proto") {
            out.push(path);
        }
    }
    Ok(())
}
