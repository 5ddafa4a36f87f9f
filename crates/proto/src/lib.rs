//! Generated protobuf messages and gRPC clients/servers for every fairdeal API.
//!
//! Layout: `build.rs` compiles every `.proto` file under the workspace's `proto/` directory
//! (`proto/fairdeal/<service>/v1/*.proto`) with prost and tonic. The Rust module tree mirrors
//! the protobuf packages, so `package fairdeal.event.v1;` is [`fairdeal::event::v1`]. A
//! service adds its API by dropping `.proto` files into `proto/`; nothing here changes.
//!
//! Features (none by default): the message types and [`FILE_DESCRIPTOR_SET`] need no
//! transport and are always there. `client` adds each service's tonic client
//! (`<service>_client`, e.g. `fairdeal::auth::v1::auth_service_client`), `server` its
//! server trait and router glue (`<service>_server`). A crate enables only what it calls:
//! a service `server` (plus `client` if it calls another service), its tests `client`, and
//! pure crates such as `fairdeal-event` neither, so they do not compile tonic.
//!
//! Generated conventions, relied on elsewhere:
//! - protobuf `map` fields are `BTreeMap`s, so encoding is deterministic (the event hash
//!   chain in `fairdeal-event` depends on it);
//! - every message implements [`prost::Name`] (its fully qualified protobuf name);
//! - [`FILE_DESCRIPTOR_SET`] holds the descriptors of every compiled file and its imports,
//!   ready for `tonic-reflection`.

#![forbid(unsafe_code)]
// The generated code is not written to this workspace's lint bar; these lints only fire there.
#![allow(unreachable_pub, unused_qualifications, missing_debug_implementations)]

#[cfg(any(feature = "client", feature = "server"))]
pub mod codec;
#[cfg(any(feature = "client", feature = "server"))]
pub mod routing;

include!(concat!(env!("OUT_DIR"), "/_includes.rs"));

/// Encoded `google.protobuf.FileDescriptorSet` of every `.proto` file under `proto/` (with
/// the well-known types they import), for `tonic_reflection`'s
/// `Builder::register_encoded_file_descriptor_set`.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/fairdeal_descriptor.bin"));

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use std::path::{Path, PathBuf};

    fn proto_files(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                proto_files(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "proto") {
                let rel = path.strip_prefix(root).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }

    /// Drift guard: the compiled descriptor set holds exactly the `.proto` files in `proto/`
    /// (plus the google well-known types they import), so nothing was left out of the build
    /// and nothing stale was left in.
    #[test]
    fn descriptor_set_matches_the_proto_directory() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
        let mut on_disk = Vec::new();
        proto_files(&root, &root, &mut on_disk);
        on_disk.sort();

        let set = prost_types::FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).unwrap();
        let mut compiled: Vec<String> = set
            .file
            .iter()
            .filter_map(|f| f.name.clone())
            .filter(|name| !name.starts_with("google/"))
            .collect();
        compiled.sort();
        assert!(on_disk.contains(&"fairdeal/event/v1/envelope.proto".to_owned()));
        assert_eq!(compiled, on_disk);
    }

    #[test]
    fn envelope_is_exported_under_its_package_path() {
        use prost::Name;
        assert_eq!(
            fairdeal::event::v1::Envelope::full_name(),
            "fairdeal.event.v1.Envelope"
        );
    }

    #[test]
    fn trace_context_is_a_btree_map() {
        let envelope = fairdeal::event::v1::Envelope::default();
        let _: &std::collections::BTreeMap<String, String> = &envelope.trace_context;
    }
}
