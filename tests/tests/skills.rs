#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Skills end to end on the in-memory stack: SKILL.md ingestion, the SKILLS
//! search type, and the skill gate's entries appended to recall (docs/recall.md, "The skill gate (rules)").

mod common;

use common::{me, offline_builder};

use std::path::{Path, PathBuf};

use recall_core::{RecallError, RecallResponse, ResponseSkillEntry, SearchType};
use recall_engine::{Engine, EngineConfig, RecallRequest, RememberInput};

const ROTATE: &str = "---\nname: Rotate API keys\ndescription: Rotate the service API keys without downtime.\nversion: 2\ntags: [security]\nallowed-tools: [Bash]\n---\n# Rotate API keys\n\n1. Create a new API key.\n2. Deploy the new key.\n3. Revoke the old API key.\n";
const DEPLOY: &str = "---\nname: Deploy the service\ndescription: Deploy the service to production with a canary.\n---\nBuild, push the image, deploy a canary, then roll out.\n";
const BACKUP: &str = "---\nname: Back up the database\ndescription: Take and verify a database backup.\n---\nDump the database, copy the dump off site, restore it to verify.\n";
const RETIRED: &str = "---\nname: Rotate API keys by hand\ndescription: The old manual key rotation.\nis_active: false\n---\nEdit the key file.\n";

fn engine(config: EngineConfig) -> Engine {
    offline_builder(config, 256).build().unwrap()
}

/// A skills tree: one directory per skill, each with its SKILL.md.
fn skills_tree(root: &Path) -> PathBuf {
    for (dir, text) in [("rotate", ROTATE), ("deploy", DEPLOY), ("backup", BACKUP), ("retired", RETIRED)] {
        let d = root.join("skills").join(dir);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("SKILL.md"), text).unwrap();
    }
    std::fs::write(root.join("skills").join("README.md"), "not a skill").unwrap();
    root.join("skills")
}

async fn ops_engine(config: EngineConfig, tmp: &Path) -> Engine {
    let engine = engine(config);
    engine
        .remember(
            &me(&engine).await,
            "ops",
            &[RememberInput::text("The service runs on three nodes. API keys expire every 90 days.")],
        )
        .await
        .unwrap();
    let (_, added) = engine.add_skills(&me(&engine).await, "ops", &[skills_tree(tmp)]).await.unwrap();
    assert_eq!(added.len(), 4);
    engine
}

fn skills_of(results: &[RecallResponse]) -> Vec<&ResponseSkillEntry> {
    results
        .iter()
        .filter_map(|r| match r {
            RecallResponse::Skills(s) => Some(s),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_gate_appends_up_to_three_skills_after_the_other_results() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = ops_engine(EngineConfig::default(), tmp.path()).await;
    let request = RecallRequest::new("How do I rotate the API keys?").query_type(SearchType::Chunks).datasets(["ops"]);
    let (results, explain) = engine.recall_explained(&me(&engine).await, &request).await.unwrap();
    assert!(explain.skill_gate);
    let skills = skills_of(&results);
    assert!(!skills.is_empty() && skills.len() <= 3, "{results:?}");
    assert_eq!(explain.skills_added, skills.len());
    // Skills come last, after the chunk results.
    let first_skill = results.iter().position(|r| matches!(r, RecallResponse::Skills(_))).unwrap();
    assert!(first_skill > 0 && results[first_skill..].iter().all(|r| matches!(r, RecallResponse::Skills(_))));
    // The closest playbook first; metadata only; inactive skills never.
    let top = skills[0];
    assert_eq!(top.text, "Rotate API keys: Rotate the service API keys without downtime.");
    assert_eq!(top.skill["name"], "Rotate API keys");
    assert_eq!(top.skill["version"], "2");
    assert_eq!(top.skill["declared_tools"], serde_json::json!(["Bash"]));
    assert!(top.score.is_some());
    for s in &skills {
        for hidden in ["procedure", "skill_text", "search_text", "score"] {
            assert!(!s.skill.contains_key(hidden), "{hidden} in {:?}", s.skill);
        }
        assert_ne!(s.skill["name"], "Rotate API keys by hand");
    }
    let scores: Vec<f64> = skills.iter().map(|s| s.score.unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");
    let json = serde_json::to_value(&results[first_skill]).unwrap();
    assert_eq!(json["source"], "skills");
}

#[tokio::test]
async fn the_gate_is_skipped_unless_one_dataset_graph_and_a_procedure_question() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = ops_engine(EngineConfig::default(), tmp.path()).await;
    engine.remember(&me(&engine).await, "other", &[RememberInput::text("Unrelated notes.")]).await.unwrap();
    let q = "How do I rotate the API keys?";
    let base = || RecallRequest::new(q).query_type(SearchType::Chunks);
    let cases = [
        ("no dataset named", base()),
        ("two datasets", base().datasets(["ops", "other"])),
        ("not a procedure question", RecallRequest::new("API keys").query_type(SearchType::Chunks).datasets(["ops"])),
        ("only_context", base().datasets(["ops"]).only_context(true)),
        ("graph not in scope", base().datasets(["ops"]).scope(["session"])),
    ];
    for (why, request) in cases {
        let (results, explain) = engine.recall_explained(&me(&engine).await, &request).await.unwrap();
        assert!(skills_of(&results).is_empty(), "{why}: {results:?}");
        assert_eq!(explain.skills_added, 0, "{why}");
    }
    // A single dataset id works as well as a name.
    let id = engine.access().dataset(&me(&engine).await, "ops").await.unwrap().id;
    let mut by_id = base();
    by_id.dataset_ids = Some(vec![id]);
    assert!(!skills_of(&engine.recall(&me(&engine).await, &by_id).await.unwrap()).is_empty());
    // Explicit SKILLS: no gate, the search type itself answers.
    let explicit = RecallRequest::new(q).query_type(SearchType::Skills).datasets(["ops"]).top_k(2);
    let (results, explain) = engine.recall_explained(&me(&engine).await, &explicit).await.unwrap();
    assert!(!explain.skill_gate);
    assert_eq!(results.len(), 2);
    let RecallResponse::Graph(e) = &results[0] else { panic!("{results:?}") };
    assert_eq!((e.kind.as_str(), e.text.as_str()), ("skill", "Rotate API keys"));
    assert!(e.score.is_some() && !e.raw.contains_key("procedure"));
    // Turned off.
    let off = ops_engine(EngineConfig { skill_gate_enabled: false, ..Default::default() }, tmp.path()).await;
    assert!(skills_of(&off.recall(&me(&off).await, &base().datasets(["ops"])).await.unwrap()).is_empty());
}

#[tokio::test]
async fn skills_are_scoped_to_their_dataset_and_a_dataset_without_skills_adds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = ops_engine(EngineConfig::default(), tmp.path()).await;
    engine
        .remember(&me(&engine).await, "other", &[RememberInput::text("Notes about API keys and deployments.")])
        .await
        .unwrap();
    let request = RecallRequest::new("What are the steps to deploy the service?")
        .query_type(SearchType::Chunks)
        .datasets(["other"]);
    let results = engine.recall(&me(&engine).await, &request).await.unwrap();
    assert!(!results.is_empty());
    assert!(skills_of(&results).is_empty(), "{results:?}");
    let explicit = RecallRequest::new("deploy").query_type(SearchType::Skills).datasets(["other"]);
    assert!(engine.recall(&me(&engine).await, &explicit).await.unwrap().is_empty());
}

#[tokio::test]
async fn the_gate_adds_skills_after_a_warming_up_marker() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = engine(EngineConfig::default());
    engine.add_skills(&me(&engine).await, "runbooks", &[skills_tree(tmp.path())]).await.unwrap();
    let results = engine
        .recall(&me(&engine).await, &RecallRequest::new("Walk me through the database backup").datasets(["runbooks"]))
        .await
        .unwrap();
    assert!(matches!(results[0], RecallResponse::System(_)), "{results:?}");
    assert!(!skills_of(&results).is_empty());
}

#[tokio::test]
async fn adding_skills_validates_every_file_first_and_replaces_on_re_add() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = engine(EngineConfig::default());
    let tree = skills_tree(tmp.path());
    let bad = tmp.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("SKILL.md"), "---\nname: [unclosed\n---\n").unwrap();
    let err = engine.add_skills(&me(&engine).await, "ops", &[tree.clone(), bad.clone()]).await.unwrap_err();
    assert!(matches!(err, RecallError::InvalidInput(ref m) if m.contains("invalid skill file")), "{err:?}");
    // Nothing was written: not even the dataset.
    assert!(matches!(
        engine.access().dataset(&me(&engine).await, "ops").await,
        Err(RecallError::DatasetNotFound { .. })
    ));
    let missing = engine.add_skills(&me(&engine).await, "ops", &[tmp.path().join("nope")]).await.unwrap_err();
    assert!(matches!(missing, RecallError::InvalidInput(_)));
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(matches!(engine.add_skills(&me(&engine).await, "ops", &[empty]).await, Err(RecallError::InvalidInput(_))));

    engine.add_skills(&me(&engine).await, "ops", std::slice::from_ref(&tree)).await.unwrap();
    std::fs::write(tree.join("deploy").join("SKILL.md"), DEPLOY.replace("with a canary", "blue-green")).unwrap();
    engine.add_skills(&me(&engine).await, "ops", &[tree]).await.unwrap();
    let skills = engine.list_skills(&me(&engine).await, "ops").await.unwrap();
    assert_eq!(skills.len(), 4);
    let deploy = skills.iter().find(|s| s.name == "Deploy the service").unwrap();
    assert_eq!(deploy.description, "Deploy the service to production blue-green.");
    assert!(deploy.procedure.starts_with("Build, push the image"));
}
