//! docker-compose.yml as the deploy tests read it: YAML with merge keys (`<<: *anchor`) and
//! compose's variable interpolation (`${VAR}`, `${VAR:-default}`, `${VAR-default}`,
//! `${VAR:?message}`, `$$`), resolved against a given environment as `docker-compose` would.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, anyhow, bail};
use serde_yaml_ng::Value;

/// One service of the compose file, interpolated.
#[derive(Debug, Clone)]
pub(crate) struct Service {
    /// Its name (also its host name on the compose network).
    pub(crate) name: String,
    /// `image`.
    pub(crate) image: Option<String>,
    /// `command` as a list (an entry point override is not used by this project).
    pub(crate) command: Vec<String>,
    /// `environment`, as a map.
    pub(crate) environment: BTreeMap<String, String>,
    /// The services it waits for, with their conditions (`service_healthy`...).
    pub(crate) depends_on: BTreeMap<String, String>,
    /// `ports`: (host port, container port).
    pub(crate) ports: Vec<(u16, u16)>,
    /// `secrets` by source name.
    pub(crate) secrets: Vec<String>,
    /// `healthcheck.test`, if any.
    pub(crate) healthcheck: Option<Vec<String>>,
}

/// The whole file, interpolated.
#[derive(Debug, Clone)]
pub(crate) struct Compose {
    /// Services by name.
    pub(crate) services: BTreeMap<String, Service>,
    /// Top-level secrets: name -> file.
    pub(crate) secrets: BTreeMap<String, String>,
}

/// Replaces compose's `${...}` expressions in `text`, looking variables up in `env`.
pub(crate) fn interpolate(text: &str, env: &BTreeMap<String, String>) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            // The matching brace: defaults may hold expressions of their own.
            let mut depth = 1usize;
            let end = tail
                .char_indices()
                .find(|(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map(|(i, _)| i)
                .ok_or_else(|| anyhow!("unclosed ${{ in {text:?}"))?;
            let expr = &tail[..end];
            out.push_str(&expression(expr, env)?);
            rest = &tail[end + 1..];
        } else {
            let len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if len == 0 {
                out.push('$');
            } else {
                out.push_str(env.get(&after[..len]).map_or("", String::as_str));
            }
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn expression(expr: &str, env: &BTreeMap<String, String>) -> anyhow::Result<String> {
    let name_len = expr
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(expr.len());
    let (name, op) = expr.split_at(name_len);
    let value = env.get(name);
    let set_nonempty = value.is_some_and(|v| !v.is_empty());
    Ok(match op {
        "" => value.cloned().unwrap_or_default(),
        _ if op.starts_with(":-") => {
            if set_nonempty {
                value.cloned().unwrap_or_default()
            } else {
                interpolate(&op[2..], env)?
            }
        }
        _ if op.starts_with('-') => match value {
            Some(v) => v.clone(),
            None => interpolate(&op[1..], env)?,
        },
        _ if op.starts_with(":?") => {
            if set_nonempty {
                value.cloned().unwrap_or_default()
            } else {
                bail!("required variable {name} is missing: {}", &op[2..])
            }
        }
        _ if op.starts_with('?') => match value {
            Some(v) => v.clone(),
            None => bail!("required variable {name} is missing: {}", &op[1..]),
        },
        _ => bail!("unsupported interpolation ${{{expr}}}"),
    })
}

/// Interpolates every string of `value`, recursively.
fn interpolate_value(value: &mut Value, env: &BTreeMap<String, String>) -> anyhow::Result<()> {
    match value {
        Value::String(s) => *s = interpolate(s, env)?,
        Value::Sequence(items) => {
            for item in items {
                interpolate_value(item, env)?;
            }
        }
        Value::Mapping(map) => {
            for (_, item) in map.iter_mut() {
                interpolate_value(item, env)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn strings(value: Option<&Value>, what: &str) -> anyhow::Result<Vec<String>> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|item| text(item).ok_or_else(|| anyhow!("{what}: not a string: {item:?}")))
            .collect(),
        Some(Value::String(s)) => Ok(s.split_whitespace().map(str::to_owned).collect()),
        Some(other) => bail!("{what}: not a list: {other:?}"),
    }
}

/// `"127.0.0.1:50051:50051"`, `"50051:50051"` or `"50051:50051/tcp"` as (host, container).
fn port(spec: &str) -> anyhow::Result<(u16, u16)> {
    let spec = spec.split('/').next().unwrap_or(spec);
    let parts: Vec<&str> = spec.rsplitn(3, ':').collect();
    match parts.as_slice() {
        [container, host, ..] => Ok((
            host.parse()
                .with_context(|| format!("host port of {spec:?}"))?,
            container
                .parse()
                .with_context(|| format!("container port of {spec:?}"))?,
        )),
        _ => bail!("port {spec:?} publishes no host port"),
    }
}

impl Compose {
    /// Reads and interpolates `path` with `env`.
    pub(crate) fn load(path: &Path, env: &BTreeMap<String, String>) -> anyhow::Result<Self> {
        let source = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Self::parse(&source, env)
    }

    /// Parses and interpolates compose YAML.
    pub(crate) fn parse(source: &str, env: &BTreeMap<String, String>) -> anyhow::Result<Self> {
        let mut root: Value = serde_yaml_ng::from_str(source).context("not YAML")?;
        root.apply_merge().context("merge keys")?;
        interpolate_value(&mut root, env)?;
        let services_value = root
            .get("services")
            .and_then(Value::as_mapping)
            .ok_or_else(|| anyhow!("no `services`"))?;
        let mut services = BTreeMap::new();
        for (name, body) in services_value {
            let name = text(name).ok_or_else(|| anyhow!("a service name is not a string"))?;
            let what = |field: &str| format!("services.{name}.{field}");
            let environment = match body.get("environment") {
                None => BTreeMap::new(),
                Some(Value::Mapping(map)) => map
                    .iter()
                    .map(|(k, v)| {
                        Ok((
                            text(k).ok_or_else(|| anyhow!("{}: key", what("environment")))?,
                            text(v).unwrap_or_default(),
                        ))
                    })
                    .collect::<anyhow::Result<_>>()?,
                Some(Value::Sequence(items)) => items
                    .iter()
                    .filter_map(text)
                    .map(|item| match item.split_once('=') {
                        Some((k, v)) => (k.to_owned(), v.to_owned()),
                        None => (item, String::new()),
                    })
                    .collect(),
                Some(other) => bail!("{}: {other:?}", what("environment")),
            };
            let depends_on = match body.get("depends_on") {
                None => BTreeMap::new(),
                Some(Value::Sequence(items)) => items
                    .iter()
                    .filter_map(text)
                    .map(|s| (s, "service_started".to_owned()))
                    .collect(),
                Some(Value::Mapping(map)) => map
                    .iter()
                    .map(|(k, v)| {
                        let condition = v
                            .get("condition")
                            .and_then(text)
                            .unwrap_or_else(|| "service_started".to_owned());
                        Ok((
                            text(k).ok_or_else(|| anyhow!("{}: key", what("depends_on")))?,
                            condition,
                        ))
                    })
                    .collect::<anyhow::Result<_>>()?,
                Some(other) => bail!("{}: {other:?}", what("depends_on")),
            };
            let ports = strings(body.get("ports"), &what("ports"))?
                .iter()
                .map(|p| port(p))
                .collect::<anyhow::Result<_>>()?;
            let secrets = match body.get("secrets") {
                None => Vec::new(),
                Some(Value::Sequence(items)) => items
                    .iter()
                    .map(|item| {
                        text(item)
                            .or_else(|| item.get("source").and_then(text))
                            .ok_or_else(|| anyhow!("{}: {item:?}", what("secrets")))
                    })
                    .collect::<anyhow::Result<_>>()?,
                Some(other) => bail!("{}: {other:?}", what("secrets")),
            };
            let healthcheck = match body.get("healthcheck").and_then(|h| h.get("test")) {
                None => None,
                Some(test) => Some(strings(Some(test), &what("healthcheck.test"))?),
            };
            let service = Service {
                name: name.clone(),
                image: body.get("image").and_then(text),
                command: strings(body.get("command"), &what("command"))?,
                environment,
                depends_on,
                ports,
                secrets,
                healthcheck,
            };
            services.insert(name, service);
        }
        let secrets = match root.get("secrets").and_then(Value::as_mapping) {
            None => BTreeMap::new(),
            Some(map) => map
                .iter()
                .filter_map(|(k, v)| Some((text(k)?, v.get("file").and_then(text)?)))
                .collect(),
        };
        Ok(Compose { services, secrets })
    }

    /// The services running the image built from deploy/Dockerfile (their command is a
    /// `fairdeal-*` binary).
    pub(crate) fn fairdeal_services(&self) -> Vec<&Service> {
        self.services
            .values()
            .filter(|s| {
                s.command
                    .first()
                    .is_some_and(|c| c.starts_with("fairdeal-"))
            })
            .collect()
    }

    /// The services in an order that starts each after what it depends on.
    pub(crate) fn start_order(&self) -> anyhow::Result<Vec<&Service>> {
        let mut order: Vec<&Service> = Vec::new();
        let mut pending: Vec<&Service> = self.services.values().collect();
        while !pending.is_empty() {
            let before = pending.len();
            pending.retain(|service| {
                let ready = service
                    .depends_on
                    .keys()
                    .all(|d| order.iter().any(|o| &o.name == d));
                if ready {
                    order.push(service);
                }
                !ready
            });
            if pending.len() == before {
                bail!(
                    "depends_on has a cycle or names an unknown service among: {}",
                    pending
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        Ok(order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn interpolation_follows_compose() {
        let e = env(&[("A", "a"), ("EMPTY", "")]);
        assert_eq!(interpolate("x${A}y$A-$$", &e).unwrap(), "xaya-$");
        assert_eq!(interpolate("${B:-dflt}", &e).unwrap(), "dflt");
        assert_eq!(interpolate("${EMPTY:-dflt}", &e).unwrap(), "dflt");
        assert_eq!(interpolate("${EMPTY-dflt}", &e).unwrap(), "");
        assert_eq!(interpolate("${B:-${A}}", &e).unwrap(), "a");
        assert!(interpolate("${EMPTY:?set it}", &e).is_err());
        assert!(interpolate("${B?set it}", &e).is_err());
    }

    #[test]
    fn ports_and_merge_keys_are_read() {
        let yaml = "x: &base\n  image: i\n  environment: {A: '1'}\nservices:\n  s:\n    <<: *base\n    command: [\"fairdeal-s\", \"--x\"]\n    ports: [\"127.0.0.1:${P:-9}:50051\"]\n";
        let compose = Compose::parse(yaml, &BTreeMap::new()).unwrap();
        let s = &compose.services["s"];
        assert_eq!(s.image.as_deref(), Some("i"));
        assert_eq!(s.environment["A"], "1");
        assert_eq!(s.command, ["fairdeal-s", "--x"]);
        assert_eq!(s.ports, [(9, 50051)]);
    }
}
