"""blind4 part 2: crop spraying records, open-pit blasting, school pickup lists, newsroom CMS, truck dispatch."""
from dsl import E, F, FB, OK, R, S, TX, U

SPRAY_TOOLS = ["get_field", "get_product_label", "log_spray_application", "amend_spray_record"]
SPRAY_ERR = "Application record invalid"

BLAST_TOOLS = ["get_blast_plan", "get_site_conditions", "confirm_clearance", "schedule_blast", "notify_crews"]
BLAST_ERR = "Blast schedule denied"

PICKUP_TOOLS = ["get_student", "add_pickup_contact", "send_consent_request", "get_consent_status", "create_office_task"]
PICKUP_ERR = "Change requires verification"

CMS_TOOLS = ["get_article", "publish_article", "schedule_publish", "request_legal_review", "get_review_status"]
CMS_ERR = "Publish failed: 400 Bad Request"

HAUL_TOOLS = ["get_load", "list_drivers", "get_driver_hours", "dispatch_load", "message_driver"]
HAUL_ERR = "Dispatch refused (code D-17)"

FAMILIES = [
    F("agri-rate-units", "agriculture", SPRAY_TOOLS, "agri-water-buffer", "operation",
      "log_spray_application takes the rate in litres per hectare; when the operator reports a rate per acre, convert it "
      "(L/acre x 2.471 = L/ha) and log it with rate_unit L/ha, never drop the unit.",
      ["per hectare", "l/ha", "2.471"],
      [
          TX("fail-fix-reasoned+value-from-result", "Log today's spray on North Paddock: Glyphar 360 at 1.2 L per acre, done 08:30", "success",
             U("Log today's spray on North Paddock: Glyphar 360 at 1.2 L per acre, done 08:30"),
             OK("get_field", {"field": "north-paddock"}, {"area_ha": 14.2, "near_water": False, "crop": "winter wheat"}),
             OK("get_product_label", {"product": "Glyphar 360"}, {"max_rate": 3.0, "rate_unit": "L/ha", "mapp": "17720"}),
             E("log_spray_application", {"field": "north-paddock", "product": "Glyphar 360", "rate": 1.2, "rate_unit": "L/acre",
                                         "time": "2026-04-11T08:30"}, SPRAY_ERR),
             R("The label and the record work in L/ha. 1.2 L/acre x 2.471 = 2.97 L/ha, under the 3.0 maximum."),
             OK("log_spray_application", {"field": "north-paddock", "product": "Glyphar 360", "rate": 2.97, "rate_unit": "L/ha",
                                          "time": "2026-04-11T08:30"}, {"record_id": "SPR-1160"})),
          TX("wrong-alt+user-corrects+generic-error", "Record spraying on Long Meadow yesterday: Fungex 250, 0.8 litres an acre", "partial",
             U("Record spraying on Long Meadow yesterday: Fungex 250, 0.8 litres an acre"),
             E("log_spray_application", {"field": "long-meadow", "product": "Fungex 250", "rate": 0.8, "rate_unit": "L/acre",
                                         "time": "2026-05-02T09:00"}, SPRAY_ERR),
             R("It may not like the unit field; leaving it out."),
             OK("log_spray_application", {"field": "long-meadow", "product": "Fungex 250", "rate": 0.8, "time": "2026-05-02T09:00"},
                {"record_id": "SPR-1187", "rate": 0.8, "rate_unit": "L/ha"}),
             U("No, that now says 0.8 a hectare, which is less than half of what went on. The book is in hectares; it was 0.8 an acre, so "
               "about 2 a hectare. Fix it before the inspector sees it."),
             OK("amend_spray_record", {"record_id": "SPR-1187", "rate": 1.98, "rate_unit": "L/ha", "reason": "rate was per acre"},
                {"record_id": "SPR-1187", "amended": True, "audit": "amendment logged"})),
      ],
      [
          "spray record for Hill Field rejected, operator wrote 1.5 L/acre of Glyphar",
          "log yesterday's herbicide pass on Barn Close, 24 fl oz per acre",
          "Application record invalid: I entered the rate the contractor gave me, 0.6 litres to the acre",
          "Our contractor's sheet from the spraying on the lower twenty acres says 1.1 L/ac of Fungex 250 at 7am Tuesday. Can you get it "
          "into the farm records? Last time it got bounced and I never figured out why, the product name was right.",
      ]),
    F("agri-water-buffer", "agriculture", SPRAY_TOOLS, "agri-rate-units", "operation",
      "When get_field shows the field borders water (near_water: true), log the spray with the no-spray buffer strip width from "
      "get_field's required_buffer_m (e.g. buffer_m: 6); a record next to a watercourse without it is invalid.",
      ["buffer", "no-spray strip"],
      [
          TX("fail-fix-silent+value-from-result+no-note+why-in-result", "Log the spray on Brook Meadow: Glyphar 360 at 2.5 L/ha this morning", "success",
             U("Log the spray on Brook Meadow: Glyphar 360 at 2.5 L/ha this morning"),
             OK("get_field", {"field": "brook-meadow"},
                {"area_ha": 8.4, "near_water": True, "watercourse": "Mill Brook", "required_buffer_m": 6}),
             E("log_spray_application", {"field": "brook-meadow", "product": "Glyphar 360", "rate": 2.5, "rate_unit": "L/ha",
                                         "time": "2026-04-14T07:40"}, SPRAY_ERR),
             OK("log_spray_application", {"field": "brook-meadow", "product": "Glyphar 360", "rate": 2.5, "rate_unit": "L/ha",
                                          "time": "2026-04-14T07:40", "buffer_m": 6}, {"record_id": "SPR-1171"})),
          TX("wrong-alt+note-rambling", "Record Fungex 250 on Weir Field, 1.0 L/ha, done at 16:00", "failure",
             U("Record Fungex 250 on Weir Field, 1.0 L/ha, done at 16:00"),
             OK("get_field", {"field": "weir-field"},
                {"area_ha": 11.0, "near_water": True, "watercourse": "River Aske", "required_buffer_m": 10}),
             E("log_spray_application", {"field": "weir-field", "product": "Fungex 250", "rate": 1.0, "rate_unit": "L/ha",
                                         "time": "2026-05-06T16:00"}, SPRAY_ERR),
             R("Perhaps it expects the rate per acre."),
             E("log_spray_application", {"field": "weir-field", "product": "Fungex 250", "rate": 0.405, "rate_unit": "L/acre",
                                         "time": "2026-05-06T16:00"}, SPRAY_ERR),
             FB("The record's still missing. The rate was fine as it was. Weir Field runs right along the river, so the record has to say "
                "how wide the strip was that we left unsprayed by the water; it's on the field sheet, 10 m there. The water people do spot "
                "checks on these, we had a letter last year about the Aske, so please get it in properly.", "negative")),
      ],
      [
          "spray log won't save for Riverside Ten, rate is 2 L/ha as per label",
          "Application record invalid for the field next to the canal, Glyphar at 3 L/ha",
          "record the fungicide pass on Ford Meadow (the one the stream runs through), 1.2 L/ha, 10am",
          "Hi, trying to put in last week's spraying for the paddock down by the lake. Rate is right, product is right, date is right, and "
          "it still says the record is invalid. Is the system broken again? I need it done for the assurance audit on Monday.",
      ]),
    F("mining-blast-clearance", "mining", BLAST_TOOLS, "mining-lightning-hold", "operation",
      "Run confirm_clearance (the shotfirer's exclusion zone sweep) for the blast plan first and pass its clearance id to "
      "schedule_blast; a charged shot cannot be scheduled before the sweep is confirmed.",
      ["confirm_clearance", "exclusion zone sweep", "clearance id"],
      [
          TX("fail-fix-reasoned", "Schedule the shot on Pit 2 bench 14 for 13:00 today", "success",
             U("Schedule the shot on Pit 2 bench 14 for 13:00 today"),
             OK("get_blast_plan", {"pit": 2, "bench": 14}, {"plan_id": "BP-2-14-077", "holes": 48, "status": "charged"}),
             E("schedule_blast", {"plan_id": "BP-2-14-077", "time": "13:00"}, BLAST_ERR),
             R("The plan is charged. A shot can't be scheduled until the shotfirer has swept the exclusion zone and confirmed it."),
             OK("confirm_clearance", {"plan_id": "BP-2-14-077", "radius_m": 500, "shotfirer": "SF-22"}, {"clearance_id": "CLR-9913", "all_clear": True}),
             OK("schedule_blast", {"plan_id": "BP-2-14-077", "time": "13:00", "clearance_id": "CLR-9913"}, {"scheduled": True, "siren": "12:55"}),
             OK("notify_crews", {"pit": 2, "text": "Blast 13:00 bench 14, sirens 12:55."}, {"sent": 31})),
          TX("rule-first+note-terse", "Fire bench 9 in pit 4 at 15:30", "success",
             U("Fire bench 9 in pit 4 at 15:30"),
             OK("get_blast_plan", {"pit": 4, "bench": 9}, {"plan_id": "BP-4-09-012", "holes": 30, "status": "charged"}),
             R("Sweep first, then schedule with the clearance."),
             OK("confirm_clearance", {"plan_id": "BP-4-09-012", "radius_m": 500, "shotfirer": "SF-08"}, {"clearance_id": "CLR-9940", "all_clear": True}),
             OK("schedule_blast", {"plan_id": "BP-4-09-012", "time": "15:30", "clearance_id": "CLR-9940"}, {"scheduled": True})),
      ],
      [
          "Blast schedule denied for pit 3 bench 22, plan is charged and the weather is clear",
          "book the 14:00 shot on the east wall, holes are loaded, lovely sunny day",
          "why does schedule_blast keep refusing the bench 6 shot? skies are blue, no storms anywhere",
          "We've got 62 holes charged on pit 1 bench 11 and the drill crew wants to fire before shift change at 14:30. I put the time in "
          "and the system said denied. Nothing odd with the weather today, the plan shows charged, nobody has been out to walk the area yet. What am I missing?",
      ]),
    F("mining-lightning-hold", "mining", BLAST_TOOLS, "mining-blast-clearance", "operation",
      "When get_site_conditions reports a lightning hold (a strike within 10 km), do not retry inside it: schedule the blast for "
      "after the hold_until time it returns and check conditions again then.",
      ["lightning", "hold_until", "after the hold"],
      [
          TX("fail-fix-reasoned+value-from-result", "Schedule the pit 2 bench 17 shot for 12:30", "success",
             U("Schedule the bench 17 pit 2 shot for 12:30"),
             OK("get_blast_plan", {"pit": 2, "bench": 17}, {"plan_id": "BP-2-17-081", "status": "charged"}),
             OK("confirm_clearance", {"plan_id": "BP-2-17-081", "radius_m": 500, "shotfirer": "SF-22"}, {"clearance_id": "CLR-9950", "all_clear": True}),
             E("schedule_blast", {"plan_id": "BP-2-17-081", "time": "12:30", "clearance_id": "CLR-9950"}, BLAST_ERR),
             OK("get_site_conditions", {"site": "pit-2"}, {"lightning_hold": True, "nearest_strike_km": 6.2, "hold_until": "13:10"}),
             R("Clearance is confirmed; the site is in a lightning hold until 13:10 and a charged shot can't be fired inside it."),
             OK("schedule_blast", {"plan_id": "BP-2-17-081", "time": "13:20", "clearance_id": "CLR-9950"}, {"scheduled": True})),
          TX("blind-retries+note-user-words", "fire pit 5 bench 3 at 16:00", "failure",
             U("fire pit 5 bench 3 at 16:00"),
             OK("confirm_clearance", {"plan_id": "BP-5-03-004", "radius_m": 500, "shotfirer": "SF-31"}, {"clearance_id": "CLR-9961", "all_clear": True}),
             E("schedule_blast", {"plan_id": "BP-5-03-004", "time": "16:00", "clearance_id": "CLR-9961"}, BLAST_ERR),
             E("schedule_blast", {"plan_id": "BP-5-03-004", "time": "16:00", "clearance_id": "CLR-9961"}, BLAST_ERR),
             E("schedule_blast", {"plan_id": "BP-5-03-004", "time": "16:05", "clearance_id": "CLR-9961"}, BLAST_ERR),
             FB("there's a storm sat over the ridge, the detector's been going off all afternoon. you can't fire till the hold lifts and the "
                "conditions screen tells you when that is. I've pushed it to tomorrow myself", "negative")),
      ],
      [
          "Blast schedule denied on bench 8 even though the sweep was signed off 10 minutes ago",
          "thunder rolling in over the north pit, need to get the 15:00 shot away",
          "schedule_blast says denied for the pit 3 shot, clearance CLR-10022 is all clear",
          "Shotfirer has swept the area, everybody's out, the plan is charged, and the system still says Blast schedule denied for 14:45. "
          "The weather station was beeping earlier and the sky over the haul road looks pretty dark. Do I just keep trying?",
      ]),
    F("school-pickup-court-order", "schools", PICKUP_TOOLS, "school-pickup-consent", "operation",
      "When get_student shows a court order or restricted-contact flag, do not add the pickup contact yourself and do not ask a "
      "parent to approve it: create_office_task so the front office (safeguarding lead) checks the change against the order.",
      ["front office", "safeguarding", "create_office_task"],
      [
          TX("wrong-alt+user-corrects", "Add Marcus Bell (uncle) as a pickup contact for Ava Bell, Year 3", "success",
             U("Add Marcus Bell (uncle) as a pickup contact for Ava Bell, Year 3"),
             OK("get_student", {"name": "Ava Bell", "year": 3}, {"student_id": "S-20411", "flags": ["court_order_on_file"], "guardians": ["Rachel Bell (primary)"]}),
             E("add_pickup_contact", {"student_id": "S-20411", "name": "Marcus Bell", "relation": "uncle"}, PICKUP_ERR),
             R("I'll ask the guardian to approve it."),
             OK("send_consent_request", {"student_id": "S-20411", "guardian": "Rachel Bell", "contact": "Marcus Bell"}, {"request_id": "CR-711", "status": "sent"}),
             U("Hold on, Ava has a court order on her file. A parent saying yes isn't enough for anyone on that list, the office has to "
               "check it against the order. Pass it to the front office."),
             OK("create_office_task", {"student_id": "S-20411", "type": "pickup_change_review", "details": "Add Marcus Bell (uncle) as pickup"},
                {"task_id": "OT-3302", "assigned_to": "front office"})),
          TX("fail-fix-reasoned", "Liam Ortega's grandad Pete Ortega will collect him on Thursdays, add him", "success",
             U("Liam Ortega's grandad Pete Ortega will collect him on Thursdays, add him"),
             OK("get_student", {"name": "Liam Ortega"}, {"student_id": "S-20488", "flags": ["restricted_contact_list: see court order 2025-F-118"]}),
             E("add_pickup_contact", {"student_id": "S-20488", "name": "Pete Ortega", "relation": "grandfather", "days": ["THU"]}, PICKUP_ERR),
             R("The file carries a court order restricting contacts. A change has to be checked against it by the front office, not by me "
               "and not by a parent's approval."),
             OK("create_office_task", {"student_id": "S-20488", "type": "pickup_change_review", "details": "Grandfather Pete Ortega, Thursdays"},
                {"task_id": "OT-3340"})),
      ],
      [
          "Change requires verification adding a stepdad as pickup for Noah Finch; there's a custody ruling",
          "Mum and dad are separated and a judge decided who collects Isla; mum wants her sister added to the list",
          "add Aunt Dee as pickup for Theo Grant (Year 1), his file has a legal restriction on it",
          "Hi, I'm Jake Reid's father. The family court sorted out arrangements last year and I'm allowed to pick him up on Wednesdays "
          "now. I'd like my partner Sarah to be able to collect him too when I'm stuck at work. The app says the change requires "
          "verification. How do I get this done?",
      ]),
    F("school-pickup-consent", "schools", PICKUP_TOOLS, "school-pickup-court-order", "operation",
      "A new pickup contact needs the primary guardian's approval: send_consent_request to the primary guardian, wait until "
      "get_consent_status says approved, then add_pickup_contact with that consent_id.",
      ["consent"],
      [
          TX("fail-fix-reasoned+value-from-result", "Add Grace Mendes (family friend) as a pickup contact for Leo Costa", "success",
             U("Add Grace Mendes (family friend) as a pickup contact for Leo Costa"),
             OK("get_student", {"name": "Leo Costa"}, {"student_id": "S-20552", "flags": [], "guardians": ["Ana Costa (primary)", "Rui Costa"]}),
             E("add_pickup_contact", {"student_id": "S-20552", "name": "Grace Mendes", "relation": "family friend"}, PICKUP_ERR),
             R("No flags on the file. A new contact needs the primary guardian's approval; request it from Ana Costa."),
             OK("send_consent_request", {"student_id": "S-20552", "guardian": "Ana Costa", "contact": "Grace Mendes"}, {"request_id": "CR-730", "status": "sent"}),
             OK("get_consent_status", {"request_id": "CR-730"}, {"status": "approved", "consent_id": "CON-730"}),
             OK("add_pickup_contact", {"student_id": "S-20552", "name": "Grace Mendes", "relation": "family friend", "consent_id": "CON-730"},
                {"added": True})),
          TX("explain-after", "Please add the childminder, Beth Lowe, to Maya Sharp's pickup list for today", "partial",
             U("Please add the childminder, Beth Lowe, to Maya Sharp's pickup list for today"),
             OK("get_student", {"name": "Maya Sharp"}, {"student_id": "S-20601", "flags": [], "guardians": ["Tom Sharp (primary)", "Jo Sharp"]}),
             E("add_pickup_contact", {"student_id": "S-20601", "name": "Beth Lowe", "relation": "childminder"}, PICKUP_ERR),
             OK("send_consent_request", {"student_id": "S-20601", "guardian": "Tom Sharp", "contact": "Beth Lowe"}, {"request_id": "CR-744", "status": "sent"}),
             OK("get_consent_status", {"request_id": "CR-744"}, {"status": "pending"}),
             S("pickup_change:S-20601", "waiting for primary guardian Tom Sharp to approve Beth Lowe"),
             R("Beth isn't on today's list yet: the add only goes through once Tom Sharp, the primary guardian, approves; the request is "
               "pending, so reception will phone him.")),
      ],
      [
          "Change requires verification when adding the neighbour as a pickup for Ella Ruiz",
          "please let my nanny collect Oscar from school, her name is Petra Novak",
          "add grandma Joan Hill to Sam Hill's collection list, nothing special on his file",
          "Hello, I'm Freya's dad, though her mum is the main contact on the school file. Our new au pair starts Monday and will do the "
          "afternoon pickups. I tried adding her in the parent app and it said the change needs verification. What happens now?",
      ]),
    F("news-embargo", "newsroom", CMS_TOOLS, "news-legal-review", "operation",
      "When get_article shows an embargo_until time in the future, do not publish now: schedule_publish at exactly the "
      "embargo_until time read from get_article.",
      ["embargo", "schedule_publish"],
      [
          TX("fail-fix-silent+value-from-result+generic-error+no-note+why-in-result", "Publish the jobs figures piece, ART-55102", "success",
             U("Publish the jobs figures piece, ART-55102"),
             E("publish_article", {"article_id": "ART-55102"}, CMS_ERR),
             OK("get_article", {"article_id": "ART-55102"},
                {"title": "Unemployment falls to 4.1%", "section": "economy", "embargo_until": "2026-11-13T07:00:00Z", "legal_flag": False}),
             OK("schedule_publish", {"article_id": "ART-55102", "at": "2026-11-13T07:00:00Z"}, {"scheduled": True})),
          TX("wrong-alt+explain-after+generic-error", "push ART-55230 live, the university study on sleep", "success",
             U("push ART-55230 live, the university study on sleep"),
             E("publish_article", {"article_id": "ART-55230"}, CMS_ERR),
             OK("request_legal_review", {"article_id": "ART-55230"}, {"review_id": "LR-881", "status": "queued"}),
             OK("get_article", {"article_id": "ART-55230"},
                {"title": "Teenagers who sleep late do better in maths", "section": "science", "embargo_until": "2026-11-14T00:01:00Z", "legal_flag": False}),
             OK("schedule_publish", {"article_id": "ART-55230", "at": "2026-11-14T00:01:00Z"}, {"scheduled": True}),
             R("A lawyer was never needed here (no legal flag). The journal's press release holds the study until 00:01 GMT Friday; the "
               "400 was the CMS refusing to go live before that, so the piece is now set to go out the minute the hold lifts.")),
          TX("clean-silent+value-from-result+why-in-result", "Publish ART-55480, the inflation figures write-up", "success",
             U("Publish ART-55480, the inflation figures write-up"),
             OK("get_article", {"article_id": "ART-55480"},
                {"title": "Inflation eases to 2.6%", "section": "economy", "embargo_until": "2026-11-18T07:00:00Z", "legal_flag": False}),
             OK("schedule_publish", {"article_id": "ART-55480", "at": "2026-11-18T07:00:00Z"}, {"scheduled": True})),
      ],
      [
          "400 Bad Request publishing the central bank rate decision story",
          "get ART-56011 out now please (Nature paper on coral bleaching, the press release came in yesterday)",
          "Publish failed: 400 Bad Request on the quarterly earnings piece; nothing legal in it, just numbers",
          "The press office sent us the NHS waiting-times report last night with a note at the top about timing. I wrote it up as "
          "ART-56100 and now the publish button throws a 400. I've checked the headline and the images, all fine. Can you get it live?",
      ]),
    F("news-legal-review", "newsroom", CMS_TOOLS, "news-embargo", "operation",
      "Articles with legal_flag set (court cases, named suspects, allegations) need a lawyer's sign-off: request_legal_review, "
      "wait for get_review_status approved, then publish; retrying the publish does not help.",
      ["legal review", "sign-off", "request_legal_review"],
      [
          TX("fail-fix-reasoned+generic-error", "Publish ART-55340, the fraud trial day 3 report", "success",
             U("Publish ART-55340, the fraud trial day 3 report"),
             E("publish_article", {"article_id": "ART-55340"}, CMS_ERR),
             OK("get_article", {"article_id": "ART-55340"}, {"section": "courts", "legal_flag": True, "embargo_until": None}),
             R("No release time on it. The legal flag is set: court copy has to be cleared by the lawyers before it can go out."),
             OK("request_legal_review", {"article_id": "ART-55340", "urgency": "same_day"}, {"review_id": "LR-902", "status": "queued"}),
             OK("get_review_status", {"review_id": "LR-902"}, {"status": "approved", "by": "J. Okoro"}),
             OK("publish_article", {"article_id": "ART-55340"}, {"published": True, "url": "/news/courts/fraud-trial-day-3"})),
          TX("blind-retries+note-terse+generic-error", "publish ART-55391 (councillor expenses allegations)", "failure",
             U("publish ART-55391 (councillor expenses allegations)"),
             E("publish_article", {"article_id": "ART-55391"}, CMS_ERR),
             E("publish_article", {"article_id": "ART-55391"}, CMS_ERR),
             E("publish_article", {"article_id": "ART-55391"}, CMS_ERR),
             FB("Allegations story: legal have to clear it first.", "negative")),
      ],
      [
          "Publish failed: 400 Bad Request for the story naming the arrested school caretaker",
          "push the libel case update live, ART-56230",
          "Publish failed: 400 Bad Request. No timing restriction on it, it's our own investigation into the landlord",
          "I've been trying to get the piece about the footballer's assault charge out for an hour, the CMS just says 400 Bad Request "
          "every time. The copy is subbed, the pictures are cleared, there's no release time on it. Editor's shouting. Help?",
      ]),
    F("truck-hours-of-service", "trucking", HAUL_TOOLS, "truck-hazmat-endorsement", "operation",
      "Check get_driver_hours and dispatch only a driver whose remaining drive time today covers the load's est_drive_h "
      "(from get_load); a driver who is short of hours gets D-17, so pick another driver.",
      ["drive time", "hours remaining", "get_driver_hours"],
      [
          TX("long-noisy+fail-fix-reasoned+value-from-result", "Dispatch L-88120 (Leeds to Bristol pallets) to Gary, send Dana the L-88121 paperwork, check L-88119", "success",
             U("Dispatch load L-88120 (Leeds -> Bristol pallets) to Gary, send Dana the paperwork for L-88121, and tell me if L-88119 delivered"),
             OK("get_load", {"load": "L-88119"}, {"status": "delivered", "pod_time": "11:02"}),
             OK("message_driver", {"driver": "D-DANA-05", "text": "Paperwork for L-88121 attached.", "attachments": ["L-88121.pdf"]}, {"sent": True}),
             OK("get_load", {"load": "L-88120"}, {"est_drive_h": 4.5, "hazmat": False, "pickup": "14:00"}),
             E("dispatch_load", {"load": "L-88120", "driver": "D-GARY-07"}, HAUL_ERR),
             OK("get_driver_hours", {"driver": "D-GARY-07"}, {"drive_remaining_h": 2.75, "duty_remaining_h": 4.0}),
             R("Gary has 2h45 of driving left today and the load needs about 4h30."),
             OK("list_drivers", {"depot": "Leeds", "available": True}, {"drivers": ["D-ANNA-03", "D-TOM-11"]}),
             OK("get_driver_hours", {"driver": "D-ANNA-03"}, {"drive_remaining_h": 8.5, "duty_remaining_h": 11.0}),
             OK("dispatch_load", {"load": "L-88120", "driver": "D-ANNA-03"}, {"dispatched": True}),
             OK("message_driver", {"driver": "D-GARY-07", "text": "L-88120 has gone to Anna, thanks."}, {"sent": True}),
             R("L-88119 delivered at 11:02, Dana has the L-88121 paperwork, L-88120 went to Anna.")),
          TX("fail-fix-silent+no-note", "send L-88302 with Priya", "success",
             U("send L-88302 with Priya"),
             E("dispatch_load", {"load": "L-88302", "driver": "D-PRIYA-12"}, HAUL_ERR),
             OK("get_driver_hours", {"driver": "D-PRIYA-12"}, {"drive_remaining_h": 1.0}),
             OK("list_drivers", {"depot": "Wakefield", "available": True}, {"drivers": ["D-OWEN-02"]}),
             OK("get_driver_hours", {"driver": "D-OWEN-02"}, {"drive_remaining_h": 9.0}),
             OK("dispatch_load", {"load": "L-88302", "driver": "D-OWEN-02"}, {"dispatched": True})),
      ],
      [
          "D-17 dispatching Kev on the 5 hour Glasgow run, he started at 5am",
          "put L-89010 on Marta, she's already done the Hull and Grimsby drops today",
          "Dispatch refused (code D-17). Ordinary dry freight, driver's been on the road since dawn.",
          "Can you get L-89100 (Cardiff, about six hours each way) out with Sunil? He's had a long day but he's the only one who knows "
          "the site. The system keeps refusing with some D-17 code and I haven't got time to ring the IT lot.",
      ]),
    F("truck-hazmat-endorsement", "trucking", HAUL_TOOLS, "truck-hours-of-service", "operation",
      "When get_load shows hazmat (a UN number, an ADR class), dispatch only a driver whose licence carries the dangerous-goods "
      "endorsement (ADR certificate): filter list_drivers by endorsement.",
      ["endorsement", "adr certificate", "hazmat-endorsed"],
      [
          TX("wrong-alt+fail-fix-reasoned+value-from-result", "Dispatch L-88440 (paint thinners, 40 drums) with Ray", "success",
             U("Dispatch L-88440 (paint thinners, 40 drums) with Ray"),
             OK("get_load", {"load": "L-88440"}, {"hazmat": True, "un": "UN1263", "adr_class": 3, "est_drive_h": 3.0}),
             E("dispatch_load", {"load": "L-88440", "driver": "D-RAY-04"}, HAUL_ERR),
             OK("get_driver_hours", {"driver": "D-RAY-04"}, {"drive_remaining_h": 7.5}),
             R("Ray has plenty of driving left. The load is ADR class 3 (UN1263) and Ray's licence has no dangerous-goods endorsement."),
             OK("list_drivers", {"depot": "Leeds", "available": True, "endorsement": "ADR"}, {"drivers": ["D-SAM-09"]}),
             OK("dispatch_load", {"load": "L-88440", "driver": "D-SAM-09"}, {"dispatched": True})),
          TX("user-corrects+note-user-words", "L-88501 to Felixstowe, give it to Nina", "success",
             U("L-88501 to Felixstowe, give it to Nina"),
             E("dispatch_load", {"load": "L-88501", "driver": "D-NINA-15"}, HAUL_ERR),
             U("ah, that's the fuel additive load. Nina hasn't got her dangerous goods ticket yet, give it to Jon, he's got his ADR"),
             OK("dispatch_load", {"load": "L-88501", "driver": "D-JON-01"}, {"dispatched": True})),
      ],
      [
          "D-17 dispatching the UN1993 load to a driver who's fresh on shift",
          "send L-89230 (200 litres of chlorine bleach in IBCs) out with Chris, he's only done one short run today",
          "Dispatch refused (code D-17): driver has 9 hours left, the load is flammable liquids",
          "New starter Lewis wants more miles so I gave him the gas cylinder delivery to the welding supplier, but the system won't let "
          "me dispatch it. He's fully rested, first job of the day. What's the problem?",
      ]),
]
