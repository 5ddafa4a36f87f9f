//! The authenticated identity behind a request.

use tonic::{Request, Status};
use uuid::Uuid;

/// Who is calling, as established from a verified access token. [`crate::AuthLayer`] puts it in
/// the request's extensions; handlers read it with [`Caller::from_request`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Caller {
    /// A player, by user id.
    Player(Uuid),
    /// An internal service, by name (e.g. `dealing`).
    Service(String),
}

impl Caller {
    /// The caller of `request`. Fails with `Unauthenticated` when the request did not pass
    /// through an [`crate::AuthLayer`] (or the method was allowed anonymously).
    pub fn from_request<T>(request: &Request<T>) -> Result<&Caller, Status> {
        request
            .extensions()
            .get::<Caller>()
            .ok_or_else(|| Status::unauthenticated("authentication required"))
    }

    /// The player's user id; `PermissionDenied` for a service token, since a service never acts
    /// as a player.
    pub fn player_id(&self) -> Result<Uuid, Status> {
        match self {
            Caller::Player(id) => Ok(*id),
            Caller::Service(_) => Err(Status::permission_denied("a player token is required")),
        }
    }

    /// The service's name; `PermissionDenied` for a player, so internal RPCs are out of a
    /// player's reach.
    pub fn require_service(&self) -> Result<&str, Status> {
        match self {
            Caller::Service(name) => Ok(name),
            Caller::Player(_) => Err(Status::permission_denied("internal method")),
        }
    }

    /// `Ok` when the caller is the player `user_id` (acting for themself), `PermissionDenied`
    /// otherwise.
    pub fn require_player(&self, user_id: Uuid) -> Result<(), Status> {
        if self.player_id()? == user_id {
            Ok(())
        } else {
            Err(Status::permission_denied("not your account"))
        }
    }
}

/// Put in a request's extensions beside its [`Caller`] when the token carries the moderator
/// role ([`crate::Role::Moderator`]): the moderator's user id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Moderator(pub Uuid);

impl Moderator {
    /// The moderator calling `request`; `PermissionDenied` when the caller's token does not
    /// carry the moderator role (`Unauthenticated` without a caller at all).
    pub fn from_request<T>(request: &Request<T>) -> Result<Uuid, Status> {
        Caller::from_request(request)?;
        request
            .extensions()
            .get::<Moderator>()
            .map(|m| m.0)
            .ok_or_else(|| Status::permission_denied("the moderator role is required"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_kept_apart() {
        let me = Uuid::now_v7();
        let player = Caller::Player(me);
        assert_eq!(player.player_id().unwrap(), me);
        assert!(player.require_player(me).is_ok());
        assert_eq!(
            player.require_player(Uuid::nil()).unwrap_err().code(),
            tonic::Code::PermissionDenied
        );
        assert_eq!(
            player.require_service().unwrap_err().code(),
            tonic::Code::PermissionDenied
        );
        let svc = Caller::Service("dealing".into());
        assert_eq!(svc.require_service().unwrap(), "dealing");
        assert_eq!(
            svc.player_id().unwrap_err().code(),
            tonic::Code::PermissionDenied
        );
    }

    #[test]
    fn moderators_are_marked() {
        let me = Uuid::now_v7();
        let mut req = Request::new(());
        req.extensions_mut().insert(Caller::Player(me));
        assert_eq!(
            Moderator::from_request(&req).unwrap_err().code(),
            tonic::Code::PermissionDenied
        );
        req.extensions_mut().insert(Moderator(me));
        assert_eq!(Moderator::from_request(&req).unwrap(), me);
    }

    #[test]
    fn missing_caller_is_unauthenticated() {
        let req = Request::new(());
        assert_eq!(
            Caller::from_request(&req).unwrap_err().code(),
            tonic::Code::Unauthenticated
        );
    }
}
