//! `-Z USER`'s user and group lookups for the static binary (#48): `/etc/passwd` and
//! `/etc/group` read directly, as musl does. A statically linked glibc cannot load the
//! NSS modules `getpwnam_r`/`initgroups` use (they are `dlopen`ed from the host's glibc of
//! another version). Users known only to LDAP or SSSD are not found by name there: give
//! their numeric uid (docs/deploy.md). The dynamically linked build keeps NSS.

use std::path::Path;

/// One `/etc/passwd` entry: name, uid, primary gid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PasswdEntry {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// The entry named `user`, or (when `user` is a number and no name matches) of that uid.
pub fn passwd_entry(passwd: &str, user: &str) -> Option<PasswdEntry> {
    let entries = || passwd.lines().filter_map(parse_passwd_line);
    entries().find(|e| e.name == user).or_else(|| {
        let uid = user.parse::<u32>().ok()?;
        entries().find(|e| e.uid == uid)
    })
}

fn parse_passwd_line(line: &str) -> Option<PasswdEntry> {
    let mut fields = line.split(':');
    let name = fields.next()?;
    if name.is_empty() || name.starts_with('#') || name.starts_with('+') || name.starts_with('-') {
        return None;
    }
    let _password = fields.next()?;
    let uid = fields.next()?.parse().ok()?;
    let gid = fields.next()?.parse().ok()?;
    Some(PasswdEntry {
        name: name.to_string(),
        uid,
        gid,
    })
}

/// The groups `user` belongs to, as `initgroups` computes them: the primary gid first,
/// then every `/etc/group` entry listing the user, each once.
pub fn group_list(group: &str, user: &str, primary: u32) -> Vec<u32> {
    let mut gids = vec![primary];
    for line in group.lines() {
        let mut fields = line.split(':');
        let (Some(_name), Some(_password), Some(gid), Some(members)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Ok(gid) = gid.parse::<u32>() else {
            continue;
        };
        if members.split(',').any(|m| m.trim() == user) && !gids.contains(&gid) {
            gids.push(gid);
        }
    }
    gids
}

/// A file of the user database, empty when unreadable (an empty root has none).
pub fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(path)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\n# comment\n+nis\nfix:x:1001:1002::/home/fix:/bin/sh\nbroken:x:notanumber:1\n";

    #[test]
    fn names_then_uids() {
        let fix = PasswdEntry {
            name: "fix".into(),
            uid: 1001,
            gid: 1002,
        };
        assert_eq!(passwd_entry(PASSWD, "fix"), Some(fix.clone()));
        assert_eq!(passwd_entry(PASSWD, "1001"), Some(fix));
        assert_eq!(passwd_entry(PASSWD, "broken"), None);
        assert_eq!(passwd_entry(PASSWD, "4242"), None);
    }

    #[test]
    fn groups_listing_the_user_follow_the_primary_one() {
        let group =
            "root:x:0:\nfix:x:1002:\nmarket:x:2000:ops,fix\nops:x:2001:ops\nfixdup:x:1002:fix\n";
        assert_eq!(group_list(group, "fix", 1002), vec![1002, 2000]);
        assert_eq!(group_list("", "fix", 7), vec![7]);
    }
}
