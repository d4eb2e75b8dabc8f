//! Skills: the SKILL.md playbooks a dataset offers to procedure questions.

use std::path::PathBuf;

use recall_core::{Dataset, DatasetRef, Result, User};
use recall_engine::skills::AddedSkill;
use recall_skills::Skill;

use super::Application;

impl Application {
    /// Adds SKILL.md files (or directories searched for them) to the
    /// dataset (created when missing); adding a skill again replaces it.
    pub async fn add_skills(
        &self,
        caller: &User,
        dataset: &DatasetRef,
        paths: &[PathBuf],
    ) -> Result<(Dataset, Vec<AddedSkill>)> {
        self.engine.add_skills(caller, dataset, paths).await
    }

    /// A readable dataset's skills.
    pub async fn skills(&self, caller: &User, dataset: &DatasetRef) -> Result<Vec<Skill>> {
        self.engine.list_skills(caller, dataset).await
    }
}
