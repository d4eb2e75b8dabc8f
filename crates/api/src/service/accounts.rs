//! Users, passwords and API keys (docs/auth.md).

use recall_accounts::{CreatedApiKey, PasswordCheck};
use recall_core::{ApiKey, Result, User};
use uuid::Uuid;

use super::Application;

impl Application {
    /// A new user, with a password when one is given; an error if the email is taken.
    pub async fn create_user(&self, email: &str, password: Option<&str>) -> Result<User> {
        self.accounts.create_user(email, password).await
    }

    /// A new user with a password (self-registration); `None` when the email is taken.
    pub async fn register_user(&self, email: &str, password: &str) -> Result<Option<User>> {
        self.accounts.register_user(email, password).await
    }

    pub async fn user_by_id(&self, id: Uuid) -> Result<Option<User>> {
        self.accounts.user_by_id(id).await
    }

    pub async fn user_by_email(&self, email: &str) -> Result<Option<User>> {
        self.accounts.user_by_email(email).await
    }

    pub async fn set_password(&self, user: &User, password: &str) -> Result<()> {
        self.accounts.set_password(user, password).await
    }

    pub async fn check_password(&self, email: &str, password: &str) -> Result<PasswordCheck> {
        self.accounts.check_password(email, password).await
    }

    /// What changes whenever the user's password does (session tokens carry its MAC).
    pub async fn password_stamp(&self, user: &User) -> Result<Option<String>> {
        self.accounts.password_stamp(user).await
    }

    /// A new key for the caller: shown once, stored as a hash.
    pub async fn create_api_key(&self, caller: &User, name: Option<&str>) -> Result<CreatedApiKey> {
        self.accounts.create_api_key(caller, name).await
    }

    pub async fn api_keys(&self, caller: &User) -> Result<Vec<ApiKey>> {
        self.accounts.api_keys(caller).await
    }

    pub async fn revoke_api_key(&self, caller: &User, id: Uuid) -> Result<()> {
        self.accounts.revoke_api_key(caller, id).await
    }

    /// The user a key belongs to, if it is valid.
    pub async fn authenticate_api_key(&self, key: &str) -> Result<Option<User>> {
        self.accounts.authenticate_api_key(key).await
    }
}
