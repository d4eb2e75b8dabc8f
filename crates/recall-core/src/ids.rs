//! Deterministic identities, computed the way Cognee computes them so that ids
//! are stable across runs and comparable with a Cognee deployment.

use md5::{Digest as _, Md5};
use uuid::Uuid;

/// RFC 4122 OID namespace (`uuid.NAMESPACE_OID` in Python).
pub const NAMESPACE_OID: Uuid = Uuid::NAMESPACE_OID;

/// Cognee's `norm()` for string identity values: lower-case, spaces become
/// underscores, apostrophes are dropped.
pub fn norm(value: &str) -> String {
    value.to_lowercase().replace(' ', "_").replace('\'', "")
}

/// `Type.id_for(*values)` = uuid5(OID, "<TypeName>:" + "|".join(norm(v))).
pub fn id_for(type_name: &str, values: &[&str]) -> Uuid {
    let joined = values.iter().map(|v| norm(v)).collect::<Vec<_>>().join("|");
    Uuid::new_v5(&NAMESPACE_OID, format!("{type_name}:{joined}").as_bytes())
}

/// md5 hex digest of raw content: Cognee's content hash for ingested data.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Md5::digest(bytes))
}

/// sha256 hex digest of a chunk's text (`DocumentChunk.content_hash`).
pub fn text_sha256(text: &str) -> String {
    use sha2::{Digest as _, Sha256};
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Id of an ingested data item: derived from its content hash and its owner,
/// so the same content remembered twice by one user is one item.
pub fn data_id(content_hash: &str, owner_id: Uuid) -> Uuid {
    Uuid::new_v5(&NAMESPACE_OID, format!("{content_hash}{owner_id}").as_bytes())
}

/// `DocumentChunk` id: uuid5(OID, "{document_id}:{sha256(text)}:{occurrence}"),
/// where `occurrence` counts identical texts earlier in the same document.
pub fn chunk_id(document_id: Uuid, text_hash: &str, occurrence: usize) -> Uuid {
    Uuid::new_v5(&NAMESPACE_OID, format!("{document_id}:{text_hash}:{occurrence}").as_bytes())
}

/// Dataset id: uuid5(OID, "{dataset_name}{owner_id}"), so a name is unique per owner.
pub fn dataset_id(name: &str, owner_id: Uuid) -> Uuid {
    Uuid::new_v5(&NAMESPACE_OID, format!("{name}{owner_id}").as_bytes())
}

/// `edge_object_id` = uuid5(OID, norm_lower(src + rel + dst)).
pub fn edge_object_id(source: Uuid, relationship_name: &str, target: Uuid) -> Uuid {
    let raw = format!("{source}{relationship_name}{target}");
    Uuid::new_v5(&NAMESPACE_OID, norm(&raw).as_bytes())
}

/// The key of an edge's type: `EdgeType.id_for(edge_text or relationship_name)`,
/// the id of its row in the `EdgeType_relationship_name` collection, through
/// which an edge matches a vector hit (docs/retrievers.md, "brute_force_triplet_search").
pub fn edge_type_key(edge_text: Option<&str>, relationship_name: &str) -> Uuid {
    id_for("EdgeType", &[edge_text.unwrap_or(relationship_name)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_for_matches_python_uuid5() {
        // uuid.uuid5(uuid.NAMESPACE_OID, "Entity:alice_smith")
        let expected = Uuid::new_v5(&Uuid::NAMESPACE_OID, b"Entity:alice_smith");
        assert_eq!(id_for("Entity", &["Alice Smith"]), expected);
        assert_eq!(norm("O'Brien Street"), "obrien_street");
        assert_eq!(id_for("EntityType", &["Person", "x"]), Uuid::new_v5(&Uuid::NAMESPACE_OID, b"EntityType:person|x"));
    }

    #[test]
    fn chunk_ids_depend_on_occurrence() {
        let doc = Uuid::new_v4();
        let h = text_sha256("same");
        assert_ne!(chunk_id(doc, &h, 0), chunk_id(doc, &h, 1));
        assert_eq!(chunk_id(doc, &h, 0), chunk_id(doc, &h, 0));
    }

    #[test]
    fn content_hash_is_md5_hex() {
        assert_eq!(content_hash(b""), "d41d8cd98f00b204e9800998ecf8427e");
    }
}
