//! What a photo takes from the files beside it (issue 15 items 4 and 5): the merge of its
//! XMP sidecar's and its Google Takeout JSON's facts into its own, by the date chain's order
//! (exif, xmp, sidecar, takeout, quicktime, filename, mtime). The rating, tags and title are
//! the sidecar's, else the file's own (a HEIF's XMP item); the description the sidecar's,
//! else the JSON's, else the file's own; the date and the
//! place only where the photo lacks them (a video's container date comes after both). Pure:
//! the scan finds and reads the files (`scan::beside`); must not open anything itself.

use super::sidecar::SidecarFacts;
use super::takeout::TakeoutFacts;
use crate::model::{MediaFacts, MediaKind, Notes, TakenAtSource};

/// What lies beside one photo, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Beside {
    pub sidecar: Option<SidecarFacts>,
    pub takeout: Option<TakeoutFacts>,
}

/// Merges `beside` into the photo's own `facts`. A file that is no picture or video takes
/// nothing. Called before `fill_undated`: a date from beside comes before the name's.
pub fn apply(facts: &mut MediaFacts, beside: &Beside) {
    if !matches!(facts.kind, Some(MediaKind::Image | MediaKind::Video)) {
        return;
    }
    let (sidecar, takeout) = (beside.sidecar.as_ref(), beside.takeout.as_ref());
    let own = std::mem::take(&mut facts.notes);
    let tags = sidecar.map(|s| distinct(&s.tags)).unwrap_or_default();
    facts.notes = Notes {
        rating: sidecar.and_then(|s| s.rating).or(own.rating),
        tags: if tags.is_empty() { own.tags } else { tags },
        title: sidecar.and_then(|s| s.title.clone()).or(own.title),
        description: (sidecar.and_then(|s| s.description.clone()))
            .or_else(|| takeout.and_then(|t| t.description.clone()))
            .or(own.description),
    };
    let undated = matches!(facts.taken_at_source, None | Some(TakenAtSource::Quicktime));
    if undated {
        if let Some(s) = sidecar.filter(|s| s.taken_local.is_some()) {
            facts.taken_local = s.taken_local.clone();
            facts.taken_offset_minutes = s.taken_offset_minutes;
            facts.taken_at_source = Some(TakenAtSource::Sidecar);
        } else if let Some(utc) = takeout.and_then(|t| t.taken_utc).and_then(utc_text) {
            facts.taken_local = Some(utc);
            facts.taken_offset_minutes = Some(0);
            facts.taken_at_source = Some(TakenAtSource::Takeout);
        }
    }
    if facts.lat.is_none() || facts.lon.is_none() {
        let place = |lat, lon| {
            let (lat, lon) = super::values::place(lat, lon);
            lat.zip(lon)
        };
        let found = (sidecar.and_then(|s| place(s.lat, s.lon)))
            .or_else(|| takeout.and_then(|t| place(t.lat, t.lon)));
        if let Some((lat, lon)) = found {
            (facts.lat, facts.lon) = (Some(lat), Some(lon));
        }
    }
}

/// Each tag once, compared without ASCII case as the store compares them, first spelling kept.
fn distinct(tags: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for tag in tags {
        if !out.iter().any(|t| t.eq_ignore_ascii_case(tag)) {
            out.push(tag.clone());
        }
    }
    out
}

/// Seconds since the epoch as a UTC wall time, `YYYY-MM-DDTHH:MM:SS`.
fn utc_text(seconds: i64) -> Option<String> {
    let when = chrono::DateTime::from_timestamp(seconds, 0)?;
    Some(when.format("%Y-%m-%dT%H:%M:%S").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn photo(source: Option<TakenAtSource>, gps: bool) -> MediaFacts {
        MediaFacts {
            kind: Some(MediaKind::Image),
            taken_local: source.map(|_| "2001-01-01T00:00:00".to_string()),
            taken_at_source: source,
            lat: gps.then_some(1.0),
            lon: gps.then_some(2.0),
            ..MediaFacts::default()
        }
    }

    fn sidecar() -> SidecarFacts {
        SidecarFacts {
            rating: Some(4),
            tags: vec!["Paris".into(), "paris".into(), "tower".into()],
            title: Some("Tower".into()),
            description: None,
            taken_local: Some("2019-06-21T18:45:12".into()),
            taken_offset_minutes: Some(120),
            lat: Some(48.0),
            lon: Some(2.3),
        }
    }

    fn takeout() -> TakeoutFacts {
        TakeoutFacts {
            taken_utc: Some(1_555_086_615),
            lat: Some(50.0),
            lon: Some(14.4),
            title: Some("IMG_4821.JPG".into()),
            description: Some("Old Town Square".into()),
        }
    }

    #[test]
    fn the_notes_come_always_and_the_date_and_place_only_where_the_photo_lacks_them() {
        let both = Beside {
            sidecar: Some(sidecar()),
            takeout: Some(takeout()),
        };
        let mut f = photo(Some(TakenAtSource::Exif), true);
        apply(&mut f, &both);
        assert_eq!(f.notes.rating, Some(4));
        assert_eq!(f.notes.tags, ["Paris", "tower"]);
        assert_eq!(f.notes.title.as_deref(), Some("Tower"));
        assert_eq!(f.notes.description.as_deref(), Some("Old Town Square"));
        assert_eq!(f.taken_local.as_deref(), Some("2001-01-01T00:00:00"));
        assert_eq!(f.taken_at_source, Some(TakenAtSource::Exif));
        assert_eq!((f.lat, f.lon), (Some(1.0), Some(2.0)));

        for source in [None, Some(TakenAtSource::Quicktime)] {
            let mut f = photo(source, false);
            apply(&mut f, &both);
            assert_eq!(f.taken_at().as_deref(), Some("2019-06-21T18:45:12+02:00"));
            assert_eq!(f.taken_at_source, Some(TakenAtSource::Sidecar));
            assert_eq!((f.lat, f.lon), (Some(48.0), Some(2.3)));
        }
    }

    #[test]
    fn takeout_comes_after_the_sidecar_and_its_time_is_utc() {
        let mut dateless = sidecar();
        (dateless.taken_local, dateless.lat) = (None, None);
        let beside = Beside {
            sidecar: Some(dateless),
            takeout: Some(takeout()),
        };
        let mut f = photo(None, false);
        apply(&mut f, &beside);
        assert_eq!(f.taken_at().as_deref(), Some("2019-04-12T16:30:15+00:00"));
        assert_eq!(f.taken_at_source, Some(TakenAtSource::Takeout));
        assert_eq!(
            (f.lat, f.lon),
            (Some(50.0), Some(14.4)),
            "the sidecar's half place is none"
        );
        assert_eq!(
            f.notes.title.as_deref(),
            Some("Tower"),
            "not Takeout's file name"
        );

        let mut other = MediaFacts {
            kind: Some(MediaKind::Other),
            ..MediaFacts::default()
        };
        apply(&mut other, &beside);
        assert_eq!(
            other,
            MediaFacts {
                kind: Some(MediaKind::Other),
                ..MediaFacts::default()
            }
        );
    }

    /// Issue 26: a HEIF's XMP item gives the file its own notes; a sidecar beside it wins
    /// field by field, and without one (or with an empty one) the file's own stay.
    #[test]
    fn the_files_own_notes_stay_where_the_sidecar_says_nothing() {
        let own = Notes {
            rating: Some(2),
            tags: vec!["moon".into()],
            title: Some("Own".into()),
            description: Some("Own words".into()),
        };
        let with_own = || MediaFacts {
            notes: own.clone(),
            ..photo(Some(TakenAtSource::Xmp), true)
        };
        let mut f = with_own();
        apply(&mut f, &Beside::default());
        assert_eq!(f.notes, own, "nothing beside");

        let mut f = with_own();
        let bare = SidecarFacts {
            rating: Some(5),
            ..SidecarFacts::default()
        };
        let beside = Beside {
            sidecar: Some(bare),
            takeout: None,
        };
        apply(&mut f, &beside);
        let expected = Notes {
            rating: Some(5),
            ..own.clone()
        };
        assert_eq!(
            f.notes, expected,
            "the sidecar's rating, the file's other notes"
        );

        let mut f = with_own();
        let full = Beside {
            sidecar: Some(sidecar()),
            takeout: None,
        };
        apply(&mut f, &full);
        assert_eq!(f.notes.tags, ["Paris", "tower"]);
        assert_eq!(f.notes.title.as_deref(), Some("Tower"));
        assert_eq!(f.notes.description.as_deref(), Some("Own words"));
    }
}
