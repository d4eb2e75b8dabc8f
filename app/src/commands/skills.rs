//! `recall skills add|list`: the SKILL.md playbooks a dataset offers.

use std::path::PathBuf;

use clap::Subcommand;
use recall_core::Result;

use super::{print_json, Target, Who};

#[derive(Subcommand)]
pub(crate) enum SkillsCommand {
    /// Add skills: SKILL.md files, or directories searched for them. Adding a
    /// skill again (same name, same directory) replaces it.
    Add {
        #[command(flatten)]
        target: Target,
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// List a dataset's skills.
    List {
        #[command(flatten)]
        target: Target,
        /// Also print each skill's procedure.
        #[arg(long)]
        full: bool,
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(who: Who<'_>, command: SkillsCommand) -> Result<()> {
    match command {
        SkillsCommand::Add { target, paths, json } => {
            let (app, user) = who.writer().await?;
            let (dataset, added) = app.add_skills(&user, &target.get(), &paths).await?;
            if json {
                return print_json(
                    &serde_json::json!({"dataset": dataset.name, "dataset_id": dataset.id, "skills": added}),
                );
            }
            for s in &added {
                println!("added skill '{}' ({}) from {}", s.name, s.id, s.source_file);
            }
            println!("{} skill(s) in dataset '{}'", added.len(), dataset.name);
            Ok(())
        }
        SkillsCommand::List { target, full, json } => {
            let target = target.get();
            let (app, user) = who.reader_of(&target).await?;
            let skills = app.skills(&user, &target).await?;
            if json {
                let rows: Vec<serde_json::Value> = skills
                    .iter()
                    .map(|s| {
                        let mut m = recall_skills::project_metadata(&s.to_payload(), "");
                        if full {
                            m.insert("procedure".into(), serde_json::Value::String(s.procedure.clone()));
                        }
                        serde_json::Value::Object(m)
                    })
                    .collect();
                return print_json(&rows);
            }
            if skills.is_empty() {
                println!("No skills in dataset '{}'.", target.label());
            }
            for s in &skills {
                println!("{} ({}): {}", s.name, s.id, s.description);
                if full {
                    for line in s.procedure.lines() {
                        println!("   | {line}");
                    }
                }
            }
            Ok(())
        }
    }
}
