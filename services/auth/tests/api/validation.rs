//! Malformed requests: InvalidArgument naming the field, and nothing stored or sent.

use fairdeal_proto::fairdeal::auth::v1 as pb;
use tonic::Code;

use crate::helpers::*;
use crate::on_both_backends;

async fn malformed_requests_change_nothing(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let good_name = unique_name();
    let good_email = format!("{good_name}@example.com");
    let cases: Vec<(pb::RegisterRequest, &str)> = vec![
        (
            pb::RegisterRequest {
                username: String::new(),
                email: good_email.clone(),
                password: PASSWORD.into(),
            },
            "username",
        ),
        (
            pb::RegisterRequest {
                username: "x".repeat(100_000),
                email: good_email.clone(),
                password: PASSWORD.into(),
            },
            "username",
        ),
        (
            pb::RegisterRequest {
                username: "bad name".into(),
                email: good_email.clone(),
                password: PASSWORD.into(),
            },
            "username",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: String::new(),
                password: PASSWORD.into(),
            },
            "email",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: "not-an-address".into(),
                password: PASSWORD.into(),
            },
            "email",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: good_email.clone(),
                password: Vec::new(),
            },
            "password",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: good_email.clone(),
                password: vec![
                    0xff, 0xfe, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
                ],
            },
            "password",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: good_email.clone(),
                password: vec![b'a'; 100_000],
            },
            "password",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: good_email.clone(),
                password: b"password123".to_vec(),
            },
            "password",
        ),
    ];
    for (request, field) in cases {
        let status = app.client.register(request).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
        assert!(
            status.message().starts_with(field),
            "message names {field}: {}",
            status.message()
        );
    }
    let store = &app.app_accounts.store;
    assert!(
        store
            .account_by_username(&good_name)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(store.unsent_mail_count().await.unwrap(), 0);

    // Login, tokens: malformed -> InvalidArgument (not "access denied", which is for
    // well-formed credentials), and no failure is counted.
    let bad_logins = [
        pb::LoginRequest {
            username: String::new(),
            password: PASSWORD.into(),
        },
        pb::LoginRequest {
            username: good_name.clone(),
            password: Vec::new(),
        },
        pb::LoginRequest {
            username: good_name.clone(),
            password: vec![0xc3, 0x28],
        },
        pb::LoginRequest {
            username: "y".repeat(10_000),
            password: PASSWORD.into(),
        },
    ];
    for request in bad_logins {
        assert_eq!(
            app.client.login(request).await.unwrap_err().code(),
            Code::InvalidArgument
        );
    }
    for token in ["", "short", &"!".repeat(43), &"a".repeat(5000)] {
        let status = app
            .client
            .refresh(pb::RefreshRequest {
                refresh_token: token.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(
            status.code(),
            Code::InvalidArgument,
            "refresh token {token:?}"
        );
        let status = app
            .client
            .confirm_email(pb::ConfirmEmailRequest {
                token: token.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
    }
    // The good registration still works: nothing above reserved the name or counted a failure.
    app.register(&good_name, &good_email).await.unwrap();
}
on_both_backends!(malformed, malformed_requests_change_nothing);

/// Every text field of every request has a bound: far over it, the call is INVALID_ARGUMENT
/// naming the field, the message quotes none of the value, and nothing is stored or sent.
async fn every_text_field_is_bounded(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let (_, username, _) = app.confirmed_user().await;
    let tokens = app.login(&username, PASSWORD).await.unwrap();
    let mails_before = app.mails().await.len();
    let huge = "q".repeat(100_000);
    let huge_bytes = huge.clone().into_bytes();
    let token43 = "A".repeat(43);
    let c = app.client.clone();

    let mut results: Vec<(&str, Result<(), tonic::Status>)> = Vec::new();
    let register = |username: &str, email: &str, password: &[u8]| {
        let mut c = c.clone();
        let r = pb::RegisterRequest {
            username: username.into(),
            email: email.into(),
            password: password.to_vec(),
        };
        async move { c.register(r).await.map(|_| ()) }
    };
    results.push((
        "username",
        register(&huge, "fresh@example.com", PASSWORD.as_bytes()).await,
    ));
    results.push((
        "email",
        register("freshname", &huge, PASSWORD.as_bytes()).await,
    ));
    results.push((
        "password",
        register("freshname", "fresh@example.com", &huge_bytes).await,
    ));
    let mut c = app.client.clone();
    results.push((
        "token",
        c.confirm_email(pb::ConfirmEmailRequest {
            token: huge.clone(),
        })
        .await
        .map(|_| ()),
    ));
    results.push((
        "email",
        c.resend_confirmation(pb::ResendConfirmationRequest {
            email: huge.clone(),
        })
        .await
        .map(|_| ()),
    ));
    results.push((
        "username",
        c.login(pb::LoginRequest {
            username: huge.clone(),
            password: PASSWORD.into(),
        })
        .await
        .map(|_| ()),
    ));
    results.push((
        "password",
        c.login(pb::LoginRequest {
            username: username.clone(),
            password: huge_bytes.clone(),
        })
        .await
        .map(|_| ()),
    ));
    results.push((
        "refresh_token",
        c.refresh(pb::RefreshRequest {
            refresh_token: huge.clone(),
        })
        .await
        .map(|_| ()),
    ));
    results.push((
        "refresh_token",
        c.logout(pb::LogoutRequest {
            refresh_token: huge.clone(),
        })
        .await
        .map(|_| ()),
    ));
    for (current, new, field) in [
        (
            huge_bytes.clone(),
            PASSWORD.as_bytes().to_vec(),
            "current_password",
        ),
        (
            PASSWORD.as_bytes().to_vec(),
            huge_bytes.clone(),
            "new_password",
        ),
    ] {
        let mut req = tonic::Request::new(pb::ChangePasswordRequest {
            current_password: current,
            new_password: new,
        });
        fairdeal_authn::attach_bearer(
            &mut req,
            &fairdeal_authn::AccessToken::new(tokens.access_token.clone()),
        )
        .unwrap();
        results.push((field, c.change_password(req).await.map(|_| ())));
    }
    results.push((
        "email",
        c.request_password_reset(pb::RequestPasswordResetRequest {
            email: huge.clone(),
        })
        .await
        .map(|_| ()),
    ));
    results.push((
        "token",
        c.reset_password(pb::ResetPasswordRequest {
            token: huge.clone(),
            new_password: "purple elephants juggle quietly".into(),
        })
        .await
        .map(|_| ()),
    ));
    results.push((
        "new_password",
        c.reset_password(pb::ResetPasswordRequest {
            token: token43.clone(),
            new_password: huge_bytes.clone(),
        })
        .await
        .map(|_| ()),
    ));
    results.push((
        "service_name",
        c.issue_service_token(pb::IssueServiceTokenRequest {
            service_name: huge.clone(),
            secret: b"secret".to_vec(),
        })
        .await
        .map(|_| ()),
    ));
    results.push((
        "secret",
        c.issue_service_token(pb::IssueServiceTokenRequest {
            service_name: "dealing".into(),
            secret: huge_bytes.clone(),
        })
        .await
        .map(|_| ()),
    ));
    assert_eq!(results.len(), 16, "every bounded field is tried");
    for (field, result) in results {
        let status = result.expect_err(field);
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
        assert!(
            status.message().starts_with(&format!("{field}:")),
            "the message names {field}: {}",
            status.message()
        );
        assert!(
            !status.message().contains("qqqq"),
            "the message does not echo the value: {}",
            status.message()
        );
    }
    // The account's password is unchanged and no mail was queued or sent.
    app.login(&username, PASSWORD).await.unwrap();
    assert_eq!(app.mails().await.len(), mails_before);
}
on_both_backends!(bounded, every_text_field_is_bounded);
