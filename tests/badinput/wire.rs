//! Requests built from the proto descriptors, byte by byte: a plausible baseline for every
//! request message and, for each field in it, the hostile values the bad-input test sends.
//!
//! Hand-encoded on purpose: prost's types cannot carry invalid UTF-8 in a `string` field or
//! a truncated body, and those are exactly the requests a hostile client sends.

use std::collections::HashMap;

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};
use uuid::Uuid;

/// One megabyte: beyond any field bound, below the servers' 4 MiB message limit.
const ONE_MB: usize = 1024 * 1024;
/// How deep nested messages are filled.
const MAX_DEPTH: usize = 3;

/// One RPC of a fairdeal service.
#[derive(Debug, Clone)]
pub(crate) struct Rpc {
    /// `fairdeal.auth.v1.AuthService`.
    pub(crate) service: String,
    /// `/fairdeal.auth.v1.AuthService/Login`.
    pub(crate) path: String,
    /// `.fairdeal.auth.v1.LoginRequest`.
    pub(crate) input: String,
    /// The server sends a stream of replies.
    pub(crate) server_streaming: bool,
}

/// A request body and what it tries.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// e.g. `table_id = 1 MB`.
    pub(crate) what: String,
    /// The encoded body.
    pub(crate) body: Vec<u8>,
}

/// The message types and services of every fairdeal package.
pub(crate) struct Descriptors {
    /// By full name with the leading dot.
    messages: HashMap<String, DescriptorProto>,
    /// Every RPC of every fairdeal service.
    pub(crate) rpcs: Vec<Rpc>,
}

impl Descriptors {
    /// Reads `fairdeal_proto::FILE_DESCRIPTOR_SET`.
    pub(crate) fn load() -> Self {
        let set = FileDescriptorSet::decode(fairdeal_proto::FILE_DESCRIPTOR_SET).unwrap();
        let mut messages = HashMap::new();
        let mut rpcs = Vec::new();
        for file in &set.file {
            let package = file.package().to_owned();
            let mut stack: Vec<(String, &DescriptorProto)> = file
                .message_type
                .iter()
                .map(|m| (format!(".{package}.{}", m.name()), m))
                .collect();
            while let Some((name, message)) = stack.pop() {
                for nested in &message.nested_type {
                    stack.push((format!("{name}.{}", nested.name()), nested));
                }
                messages.insert(name, message.clone());
            }
            if !package.starts_with("fairdeal.") {
                continue;
            }
            for service in &file.service {
                let full = format!("{package}.{}", service.name());
                for method in &service.method {
                    assert!(
                        !method.client_streaming(),
                        "{full}/{}: client streaming is not covered by this test yet",
                        method.name()
                    );
                    rpcs.push(Rpc {
                        service: full.clone(),
                        path: format!("/{full}/{}", method.name()),
                        input: method.input_type().to_owned(),
                        server_streaming: method.server_streaming(),
                    });
                }
            }
        }
        Self { messages, rpcs }
    }

    /// The baseline request and every hostile variant of `rpc`'s request.
    pub(crate) fn cases(&self, rpc: &Rpc) -> Vec<Case> {
        let baseline = self.encode(&rpc.input, &[], None, 0);
        let mut cases = vec![
            Case {
                what: "baseline".into(),
                body: baseline.clone(),
            },
            Case {
                what: "garbage body".into(),
                body: vec![0xff; 24],
            },
            Case {
                what: "a field of wire type 7".into(),
                body: vec![0x0f, 0x01, 0x02],
            },
        ];
        if baseline.len() > 1 {
            cases.push(Case {
                what: "truncated body".into(),
                body: baseline[..baseline.len() - 1].to_vec(),
            });
        }
        let mut leaves = Vec::new();
        self.leaves(&rpc.input, &mut Vec::new(), &mut leaves, 0);
        for (path, field) in leaves {
            for (label, value) in hostile(&field) {
                cases.push(Case {
                    what: format!("{} = {label}", dotted(&path, &self.messages, &rpc.input)),
                    body: self.encode(&rpc.input, &path, Some(&value), 0),
                });
            }
        }
        cases
    }

    /// Every scalar field reachable from `message`, as field-number paths.
    fn leaves(
        &self,
        message: &str,
        prefix: &mut Vec<i32>,
        out: &mut Vec<(Vec<i32>, FieldDescriptorProto)>,
        depth: usize,
    ) {
        let Some(descriptor) = self.messages.get(message) else {
            return;
        };
        for field in &descriptor.field {
            prefix.push(field.number());
            if field.r#type() == Type::Message {
                if depth < MAX_DEPTH {
                    self.leaves(field.type_name(), prefix, out, depth + 1);
                }
            } else {
                out.push((prefix.clone(), field.clone()));
            }
            prefix.pop();
        }
    }

    /// `message` with every field at its baseline, except the field at `path`, which holds
    /// `replacement`.
    fn encode(
        &self,
        message: &str,
        path: &[i32],
        replacement: Option<&Value>,
        depth: usize,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let Some(descriptor) = self.messages.get(message) else {
            return out;
        };
        for field in &descriptor.field {
            let here = path.first() == Some(&field.number());
            let value = if field.r#type() == Type::Message {
                // Map entries and deep nests stay empty; the rest is filled recursively.
                if depth >= MAX_DEPTH || is_map_entry(&self.messages, field) {
                    continue;
                }
                let rest = if here { &path[1..] } else { &[][..] };
                Value::Bytes(self.encode(
                    field.type_name(),
                    rest,
                    if here { replacement } else { None },
                    depth + 1,
                ))
            } else if here && path.len() == 1 {
                match replacement {
                    Some(v) => v.clone(),
                    None => baseline(field),
                }
            } else {
                baseline(field)
            };
            put(&mut out, field.number(), &value);
        }
        out
    }
}

/// A field's encoded value.
#[derive(Debug, Clone)]
enum Value {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 2 (strings, bytes, messages).
    Bytes(Vec<u8>),
    /// Wire type 5.
    Fixed32(u32),
    /// Wire type 1.
    Fixed64(u64),
}

/// Appends field `number` holding `value`.
fn put(out: &mut Vec<u8>, number: i32, value: &Value) {
    let number = u64::from(number.unsigned_abs());
    let (wire, body) = match value {
        Value::Varint(v) => (0, varint(*v)),
        Value::Fixed64(v) => (1, v.to_le_bytes().to_vec()),
        Value::Bytes(b) => {
            let mut body = varint(b.len() as u64);
            body.extend_from_slice(b);
            (2, body)
        }
        Value::Fixed32(v) => (5, v.to_le_bytes().to_vec()),
    };
    out.extend(varint((number << 3) | wire));
    out.extend(body);
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

fn is_map_entry(messages: &HashMap<String, DescriptorProto>, field: &FieldDescriptorProto) -> bool {
    field.label() == Label::Repeated
        && messages
            .get(field.type_name())
            .and_then(|m| m.options.as_ref())
            .is_some_and(|o| o.map_entry())
}

/// A plausible value for `field`, from its type and name, so that a request gets past its
/// other fields' checks to the field under test.
fn baseline(field: &FieldDescriptorProto) -> Value {
    let name = field.name();
    match field.r#type() {
        Type::String => Value::Bytes(plausible_text(name).into_bytes()),
        Type::Bytes => Value::Bytes(vec![7; 32]),
        Type::Bool => Value::Varint(0),
        Type::Enum => Value::Varint(1),
        Type::Fixed32 | Type::Sfixed32 | Type::Float => Value::Fixed32(1),
        Type::Fixed64 | Type::Sfixed64 | Type::Double => Value::Fixed64(1),
        Type::Sint32 | Type::Sint64 => Value::Varint(2),
        _ => Value::Varint(1),
    }
}

fn plausible_text(name: &str) -> String {
    let unique = Uuid::now_v7().simple().to_string();
    if name.ends_with("_id") || name == "id" {
        Uuid::now_v7().to_string()
    } else if name.contains("email") {
        format!("bad{}@example.com", &unique[20..])
    } else if name.contains("username") {
        format!("bad{}", &unique[20..])
    } else if name.contains("password") || name.contains("secret") {
        "correct horse battery staple 7".into()
    } else if name == "deck" {
        "bridge".into()
    } else if name.contains("seed") || name.contains("commitment") || name.contains("hash") {
        "a3".repeat(32)
    } else if name == "game" {
        "dice".into()
    } else {
        "x".into()
    }
}

/// The hostile values of `field`, labelled.
fn hostile(field: &FieldDescriptorProto) -> Vec<(&'static str, Value)> {
    let minus_one = Value::Varint(u64::MAX);
    match field.r#type() {
        Type::String | Type::Bytes => vec![
            ("empty", Value::Bytes(Vec::new())),
            ("1 MB", Value::Bytes(vec![b'a'; ONE_MB])),
            ("invalid UTF-8", Value::Bytes(vec![b'a', 0xff, 0xfe, 0xc3])),
            (
                "control characters",
                Value::Bytes(b"a\x00\x07\x1b[2J\r\n\x7fb".to_vec()),
            ),
        ],
        Type::Int32 | Type::Enum => vec![
            ("0", Value::Varint(0)),
            ("-1", minus_one),
            ("max", Value::Varint(i32::MAX as u64)),
        ],
        Type::Int64 => vec![
            ("0", Value::Varint(0)),
            ("-1", minus_one),
            ("max", Value::Varint(i64::MAX as u64)),
        ],
        Type::Uint32 => vec![
            ("0", Value::Varint(0)),
            ("-1", minus_one),
            ("max", Value::Varint(u64::from(u32::MAX))),
        ],
        Type::Uint64 => vec![
            ("0", Value::Varint(0)),
            ("-1", minus_one),
            ("max", Value::Varint(u64::MAX)),
        ],
        Type::Sint32 | Type::Sint64 => vec![
            ("0", Value::Varint(0)),
            ("-1", Value::Varint(1)),
            ("max", Value::Varint(u64::MAX - 1)),
        ],
        Type::Fixed32 | Type::Sfixed32 => vec![
            ("0", Value::Fixed32(0)),
            ("-1", Value::Fixed32(u32::MAX)),
            ("max", Value::Fixed32(i32::MAX.unsigned_abs())),
        ],
        Type::Fixed64 | Type::Sfixed64 => vec![
            ("0", Value::Fixed64(0)),
            ("-1", Value::Fixed64(u64::MAX)),
            ("max", Value::Fixed64(i64::MAX.unsigned_abs())),
        ],
        Type::Double => vec![
            ("0", Value::Fixed64(0f64.to_bits())),
            ("-1", Value::Fixed64((-1f64).to_bits())),
            ("max", Value::Fixed64(f64::MAX.to_bits())),
            ("NaN", Value::Fixed64(f64::NAN.to_bits())),
        ],
        Type::Float => vec![
            ("0", Value::Fixed32(0f32.to_bits())),
            ("-1", Value::Fixed32((-1f32).to_bits())),
            ("max", Value::Fixed32(f32::MAX.to_bits())),
            ("NaN", Value::Fixed32(f32::NAN.to_bits())),
        ],
        Type::Bool => vec![("true", Value::Varint(1)), ("2", Value::Varint(2))],
        Type::Message | Type::Group => Vec::new(),
    }
}

/// `tokens.refresh_token` for a field-number path.
fn dotted(path: &[i32], messages: &HashMap<String, DescriptorProto>, root: &str) -> String {
    let mut names = Vec::new();
    let mut message = root.to_owned();
    for number in path {
        let Some(field) = messages
            .get(&message)
            .and_then(|m| m.field.iter().find(|f| f.number() == *number))
        else {
            names.push(number.to_string());
            continue;
        };
        names.push(field.name().to_owned());
        message = field.type_name().to_owned();
    }
    names.join(".")
}
