//! A string that never shows itself in `Debug` output or logs: API keys,
//! passwords, URLs with credentials. Read it with [`Secret::expose`] (or
//! through `Deref<Target = str>`) only where it is sent.
//!
//! (The `secrecy` crate does this too, but does not serialize or compare,
//! which settings structs need for layering and tests.)

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("\"\"")
        } else {
            f.write_str("***")
        }
    }
}

impl std::ops::Deref for Secret {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_string())
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::from("sk-very-secret");
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(format!("{:?}", Some(s.clone())), "Some(***)");
        assert_eq!(format!("{:?}", Secret::default()), "\"\"");
        assert_eq!(s.expose(), "sk-very-secret");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"sk-very-secret\"");
    }
}
