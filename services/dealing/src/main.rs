//! The dealing service binary: the kit's host runs [`fairdeal_dealing::DealingService`].
#![forbid(unsafe_code)]

#[global_allocator]
static ALLOCATOR: fairdeal_kit::Allocator = fairdeal_kit::Allocator;

fn main() -> anyhow::Result<()> {
    fairdeal_kit::host::main::<fairdeal_dealing::DealingService>()
}
