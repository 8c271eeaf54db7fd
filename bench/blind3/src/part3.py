"""Families 24-35: weather stations, building inspections, university registrar, clinical-trial
eCRF, lift maintenance, container terminal, air-quality sensors."""
from dsl import E, F, FB, OK, R, S, TX, U

WX_TOOLS = ["get_station", "upload_readings", "upload_backfill", "calibrate_sensor"]
WX_ERR = "INGEST_REJECTED: timestamps outside accepted window"

INSP_TOOLS = ["get_permit", "schedule_inspection", "pay_fee", "upload_plans"]
INSP_ERR = "INSPECTION_NOT_SCHEDULABLE: permit not in ready state"

REG_TOOLS = ["get_student", "get_course", "enroll_student", "request_override"]
REG_ERR = "ENROLL_DENIED: prerequisite not satisfied"

CRF_TOOLS = ["get_visit", "submit_crf", "open_query", "unlock_form"]


def crf_err(field):
    return f"VALIDATION_ERROR: value outside expected range (field {field})"


LIFT_TOOLS = ["get_unit", "dispatch_technician", "set_unit_status", "notify_building"]
LIFT_ERR = "DISPATCH_BLOCKED: unit status does not permit this job type"

FAMILIES = [
    F("weather-utc-timestamps", "weather-stations", WX_TOOLS, "weather-backfill-old-readings", "operation",
      "Live readings must carry UTC timestamps (ISO-8601 with Z); station loggers stamp local time, so convert with "
      "the station's offset before upload_readings, otherwise readings look like they come from the future or past.",
      ["to utc", "utc timestamp", "time zone"],
      [
          TX("fail-fix-reasoned", "Upload the last hour of readings from WS-0412 (Auckland)", "success",
             U("Upload the last hour of readings from WS-0412 in Auckland, the logger file is attached."),
             OK("get_station", {"station_id": "WS-0412"}, {"site": "Auckland Domain", "tz": "Pacific/Auckland", "status": "online"}),
             E("upload_readings", {"station_id": "WS-0412", "readings": [{"ts": "2026-01-20T09:00:00", "temp_c": 21.4},
                                                                         {"ts": "2026-01-20T09:10:00", "temp_c": 21.6}]}, WX_ERR),
             R("The logger's 09:00 is local time in Auckland (UTC+13 in summer), so the ingest reads it as 13 hours "
               "in the future. Convert to UTC."),
             OK("upload_readings", {"station_id": "WS-0412", "readings": [{"ts": "2026-01-19T20:00:00Z", "temp_c": 21.4},
                                                                          {"ts": "2026-01-19T20:10:00Z", "temp_c": 21.6}]},
                {"accepted": 2})),
          TX("blind-retries", "Push the morning's readings from the Boulder mesa station WS-1730", "failure",
             U("Push this morning's readings from WS-1730 on the Boulder mesa."),
             E("upload_readings", {"station_id": "WS-1730", "readings": [{"ts": "2026-02-03T06:00:00", "wind_ms": 4.1}]}, WX_ERR),
             E("upload_readings", {"station_id": "WS-1730", "readings": [{"ts": "2026-02-03T06:00:00", "wind_ms": 4.1}]}, WX_ERR),
             E("upload_readings", {"station_id": "WS-1730", "readings": [{"ts": "2026-02-03T06:00:00", "wind_ms": 4.1}]}, WX_ERR),
             FB("The logger writes Mountain time (UTC-7) and the ingest wants UTC; 06:00 local is 13:00Z. Retrying the "
                "same file won't change that.", "negative")),
      ],
      [
          "push this morning's readings from WS-1190 (Perth); the logger stamps look like 2026-08-14 09:00",
          "INGEST_REJECTED: timestamps outside accepted window. Live readings from the Hobart station, last hour only",
          "Hi there, we've just installed a new station at our vineyard in the Napa valley (WS-2088) and the logger "
          "is sending its first readings, but every single batch comes back rejected. The data looks perfectly fine on "
          "the logger's own screen, 10-minute intervals, today's date. What are we missing?",
          "live feed from our Honolulu station rejected",
      ]),
    F("weather-backfill-old-readings", "weather-stations", WX_TOOLS, "weather-utc-timestamps", "operation",
      "upload_readings only accepts the last 7 days; historic data (logger memory after an outage, SD-card dumps, a "
      "station taken over) goes through upload_backfill.",
      ["upload_backfill", "backfill"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Load the logger memory of WS-0978 after its 3-week outage", "success",
             U("WS-0978 was offline for three weeks after the storm. The technician pulled the logger memory, please load it."),
             E("upload_readings", {"station_id": "WS-0978", "readings": [{"ts": "2026-03-02 14:00", "rain_mm": 0.2}], "count": 3024}, WX_ERR),
             R("Probably local timestamps; convert them to UTC."),
             E("upload_readings", {"station_id": "WS-0978", "readings": [{"ts": "2026-03-02T13:00:00Z", "rain_mm": 0.2}], "count": 3024}, WX_ERR),
             OK("get_station", {"station_id": "WS-0978"}, {"tz": "Europe/Paris", "live_window_days": 7, "last_reading": "2026-03-01T22:50:00Z"}),
             R("The live endpoint only takes the last 7 days; these readings are up to three weeks old, so they go "
               "through the backfill upload."),
             OK("upload_backfill", {"station_id": "WS-0978", "file": "ws0978_logger_dump.csv"}, {"accepted": 3024, "job": "BF-221"})),
          TX("rule-first", "Import the SD-card dump from WS-3318 covering January and February", "success",
             U("Import the SD card dump from WS-3318, it covers January and February."),
             R("Those readings are weeks old, and the live upload only accepts the last 7 days, so use the backfill "
               "upload for the whole file."),
             OK("upload_backfill", {"station_id": "WS-3318", "file": "ws3318_jan_feb.csv"}, {"accepted": 8496, "job": "BF-240"}),
             FB("Perfect, the charts are complete now.")),
      ],
      [
          "load the SD card dump from WS-2207: March to May",
          "INGEST_REJECTED timestamps outside accepted window. The station was down 3 weeks, uploading what the logger stored",
          "We've taken over the weather station at the old sailing club (WS-1414) and the previous owners gave us a USB "
          "stick with all of last winter's data. We'd love to get it into the system so the history's complete, but it "
          "gets rejected batch after batch.",
          "import last year's readings for a station we just acquired",
      ]),

    F("inspection-outstanding-fee", "building-inspections", INSP_TOOLS, "inspection-revised-plans", "operation",
      "A permit with a balance due (typically the re-inspection charge after a failed inspection) can't get a new "
      "inspection: get_permit shows it; pay it with pay_fee, then schedule_inspection.",
      ["pay_fee", "balance due", "re-inspection charge"],
      [
          TX("fail-fix-reasoned", "Book the framing re-inspection for permit BP-2026-0211 on Thursday", "success",
             U("Book the framing re-inspection for permit BP-2026-0211 on Thursday. We fixed the header the inspector flagged."),
             E("schedule_inspection", {"permit": "BP-2026-0211", "type": "framing", "date": "2026-04-16"}, INSP_ERR),
             OK("get_permit", {"permit": "BP-2026-0211"}, {"status": "hold", "balance_due": 150.0,
                                                          "items": [{"desc": "re-inspection, framing", "amount": 150.0}]}),
             R("A failed inspection adds a re-inspection charge and the permit is on hold until it's paid."),
             OK("pay_fee", {"permit": "BP-2026-0211", "amount": 150.0, "method": "card_on_file"}, {"paid": True, "status": "ready"}),
             OK("schedule_inspection", {"permit": "BP-2026-0211", "type": "framing", "date": "2026-04-16"}, {"inspection_id": "IN-77310", "window": "AM"})),
          TX("user-corrects", "Schedule the plumbing inspection for BP-2026-0388", "success",
             U("Schedule the rough plumbing inspection for BP-2026-0388, any day next week."),
             E("schedule_inspection", {"permit": "BP-2026-0388", "type": "plumbing_rough", "date": "2026-05-04"}, INSP_ERR),
             R("The permit isn't ready; maybe the plans need updating. I'll upload the current drawings again."),
             U("The drawings haven't changed. We failed the first plumbing check and there's a re-inspection charge outstanding, pay that."),
             OK("pay_fee", {"permit": "BP-2026-0388", "amount": 95.0, "method": "card_on_file"}, {"paid": True, "status": "ready"}),
             OK("schedule_inspection", {"permit": "BP-2026-0388", "type": "plumbing_rough", "date": "2026-05-04"}, {"inspection_id": "IN-77452"}),
             FB("Good.")),
      ],
      [
          "book the insulation re-check for permit BP-2026-0418, it failed last Wednesday",
          "INSPECTION_NOT_SCHEDULABLE: permit not in ready state. We failed the rough electrical on Tuesday, it's fixed now, want a re-inspection Friday",
          "Hello, we're the contractor on the Maple Street extension (BP-2026-0602). The inspector failed our footing "
          "inspection because a bit of rebar was exposed; we've sorted it and the crew is standing around waiting. The "
          "portal won't let me book the next visit. Help!",
          "can't book a re-inspection after a failed electrical check",
      ]),
    F("inspection-revised-plans", "building-inspections", INSP_TOOLS, "inspection-outstanding-fee", "operation",
      "After a change of scope during the build (moved wall, added skylight or window, new layout) the permit waits "
      "for revised drawings: upload_plans as a new revision, then schedule_inspection.",
      ["upload_plans", "revised plans", "revision"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Schedule the framing inspection for BP-2026-0275 next Monday", "success",
             U("Schedule the framing inspection for BP-2026-0275 next Monday. The owners decided to move the bathroom to the back of the house."),
             E("schedule_inspection", {"permit": "BP-2026-0275", "type": "framing", "date": "2026-04-20"}, INSP_ERR),
             R("Probably something owed on the permit."),
             E("pay_fee", {"permit": "BP-2026-0275", "amount": 0}, "NOTHING_DUE: permit has no outstanding balance"),
             OK("get_permit", {"permit": "BP-2026-0275"}, {"status": "hold", "balance_due": 0.0, "hold_reason": "scope change reported; plans rev A superseded"}),
             R("The hold is the change of scope: the approved plans no longer match what's being built. Upload the "
               "revised drawings as revision B."),
             OK("upload_plans", {"permit": "BP-2026-0275", "revision": "B", "files": ["floor_plan_revB.pdf"]}, {"status": "ready"}),
             OK("schedule_inspection", {"permit": "BP-2026-0275", "type": "framing", "date": "2026-04-20"}, {"inspection_id": "IN-77501"})),
          TX("blind-retries", "Book the insulation inspection for BP-2026-0491", "failure",
             U("Book the insulation inspection for BP-2026-0491; the clients added a second skylight last month."),
             E("schedule_inspection", {"permit": "BP-2026-0491", "type": "insulation", "date": "2026-06-09"}, INSP_ERR),
             E("schedule_inspection", {"permit": "BP-2026-0491", "type": "insulation", "date": "2026-06-09"}, INSP_ERR),
             E("schedule_inspection", {"permit": "BP-2026-0491", "type": "insulation", "date": "2026-06-10"}, INSP_ERR),
             FB("The skylight changed the roof structure; the permit waits for revised drawings. Until they're uploaded no "
                "inspection can be booked, whatever the date.", "negative")),
      ],
      [
          "schedule the insulation inspection for BP-2026-0533; the client decided to add a skylight mid-build",
          "INSPECTION_NOT_SCHEDULABLE: permit not in ready state. The kitchen wall ended up 600 mm further out than drawn",
          "We're renovating a 1930s semi (permit BP-2026-0720). Halfway through, the owners asked us to knock the dining "
          "room and kitchen into one and put in bifold doors instead of the window. Now I can't book the next "
          "inspection at all and the site's idle. What does the council want?",
          "owner changed the layout, now the framing inspection can't be booked",
      ]),

    F("registrar-transfer-credit", "university-registrar", REG_TOOLS, "registrar-concurrent-prereq", "operation",
      "A prerequisite completed at another institution isn't on the transcript: file request_override with reason "
      "'transfer_credit' and the other school's transcript; retrying the enrolment won't work.",
      ["request_override", "override", "transfer_credit"],
      [
          TX("fail-fix-reasoned", "Enrol student 2209917 in CHEM 310; she took organic chemistry at Lakeside College", "success",
             U("Enrol student 2209917 in CHEM 310. She took Organic Chemistry I at Lakeside College before transferring."),
             E("enroll_student", {"student_id": "2209917", "course": "CHEM 310", "term": "2026FA"}, REG_ERR),
             OK("get_student", {"student_id": "2209917"}, {"completed": ["CHEM 101", "CHEM 102"], "transfer_evaluated": False}),
             R("CHEM 220 (Organic I) was taken elsewhere and hasn't been posted to her transcript, so the system can't "
               "see it. The department grants that through a prerequisite override with the transfer transcript."),
             OK("request_override", {"student_id": "2209917", "course": "CHEM 310", "reason": "transfer_credit",
                                     "evidence": "lakeside_transcript.pdf"}, {"override_id": "OV-3318", "status": "approved"}),
             OK("enroll_student", {"student_id": "2209917", "course": "CHEM 310", "term": "2026FA"}, {"enrolled": True, "section": "002"})),
          TX("explain-after", "Put exchange student 2315508 into ECON 340", "success",
             U("Exchange student 2315508 from Uppsala wants ECON 340 this term."),
             E("enroll_student", {"student_id": "2315508", "course": "ECON 340", "term": "2026SP"}, REG_ERR),
             OK("request_override", {"student_id": "2315508", "course": "ECON 340", "reason": "transfer_credit",
                                     "evidence": "uppsala_record.pdf"}, {"override_id": "OV-3342", "status": "approved"}),
             OK("enroll_student", {"student_id": "2315508", "course": "ECON 340", "term": "2026SP"}, {"enrolled": True}),
             R("Enrolled. His intermediate micro was done at Uppsala, which our prerequisite check can't see; the "
               "department approves that through an override with his home transcript.")),
      ],
      [
          "enrol student 2207731 in STAT 301; he did intro stats at Riverside Community College",
          "ENROLL_DENIED: prerequisite not satisfied. She passed Cell Biology at her previous university before switching to us",
          "Good afternoon. I'm a visiting student from the University of Otago for one semester and I'd like to take "
          "COMP 330. I've completed data structures at home (I have my academic record as a PDF) but the portal keeps "
          "refusing me. Is there something I should do?",
          "exchange student blocked from a 300-level class",
      ]),
    F("registrar-concurrent-prereq", "university-registrar", REG_TOOLS, "registrar-transfer-credit", "operation",
      "When the prerequisite is being taken this term, enrol the student for next term with allow_in_progress=true "
      "(the prerequisite is checked when grades post); no department exception is needed.",
      ["allow_in_progress", "in progress", "in-progress"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Register 2288410 for MATH 241 next term; she's taking MATH 140 now", "success",
             U("Register student 2288410 for MATH 241 next term. She's taking MATH 140 right now."),
             E("enroll_student", {"student_id": "2288410", "course": "MATH 241", "term": "2026FA"}, REG_ERR),
             R("Prerequisite missing; ask the department for an exception."),
             E("request_override", {"student_id": "2288410", "course": "MATH 241", "reason": "other"},
               "OVERRIDE_DECLINED: not needed, prerequisite is current-term enrolment"),
             R("The department says no exception is needed because she's enrolled in MATH 140 this term; the "
               "enrolment should just accept an in-progress prerequisite."),
             OK("enroll_student", {"student_id": "2288410", "course": "MATH 241", "term": "2026FA", "allow_in_progress": True},
                {"enrolled": True, "conditional": "MATH 140 grade C or better"})),
          TX("user-corrects", "Sign 2301176 up for SPAN 202 in the spring", "success",
             U("Sign 2301176 up for SPAN 202 in the spring."),
             E("enroll_student", {"student_id": "2301176", "course": "SPAN 202", "term": "2027SP"}, REG_ERR),
             R("I'll file an exception request with the languages department."),
             U("Don't, he's doing SPAN 201 this semester. Enrol him conditionally on the one in progress."),
             OK("enroll_student", {"student_id": "2301176", "course": "SPAN 202", "term": "2027SP", "allow_in_progress": True},
                {"enrolled": True, "conditional": "SPAN 201"}),
             FB("Yes.")),
      ],
      [
          "register 2311904 for PHYS 202 next spring; he's halfway through PHYS 201 now",
          "ENROLL_DENIED prerequisite not satisfied. The student is sitting the prereq this very semester",
          "Hi! I'm a sophomore (2290033) and I'm planning my fall schedule. I want to take Biochemistry, whose "
          "requirement is Organic II, which I'm in the middle of right now and doing fine in. The registration site "
          "won't let me add Biochem for fall. Do I really have to wait a whole extra semester?",
          "can't sign up for part 2 of a sequence before finishing part 1 this term",
      ]),

    F("ecrf-lab-unit-conversion", "clinical-trials", CRF_TOOLS, "ecrf-genuine-outlier", "operation",
      "The eCRF stores lab values in SI units (glucose and potassium in mmol/L, creatinine in µmol/L); US sites report "
      "conventional units (mg/dL), so convert (glucose ÷ 18, creatinine × 88.4) before submit_crf.",
      ["mmol", "si unit", "µmol"],
      [
          TX("fail-fix-reasoned", "Enter week-4 labs for subject 103-0012 from the Atlanta site: glucose 126", "success",
             U("Enter the week 4 labs for subject 103-0012, Atlanta site: fasting glucose 126."),
             OK("get_visit", {"subject": "103-0012", "visit": "W4"}, {"site": "Atlanta, US", "form": "LAB", "status": "open"}),
             E("submit_crf", {"subject": "103-0012", "visit": "W4", "fields": {"LB_GLUC": 126}}, crf_err("LB_GLUC")),
             R("126 is a normal fasting glucose in mg/dL, the US convention; the form expects mmol/L. 126 / 18 = 7.0."),
             OK("submit_crf", {"subject": "103-0012", "visit": "W4", "fields": {"LB_GLUC": 7.0}}, {"saved": True, "status": "complete"})),
          TX("blind-retries", "Enter screening creatinine 1.1 for subject 107-0044 (Denver site)", "failure",
             U("Screening creatinine for 107-0044, Denver site: 1.1."),
             E("submit_crf", {"subject": "107-0044", "visit": "SCR", "fields": {"LB_CREAT": 1.1}}, crf_err("LB_CREAT")),
             E("submit_crf", {"subject": "107-0044", "visit": "SCR", "fields": {"LB_CREAT": 1.1}}, crf_err("LB_CREAT")),
             E("submit_crf", {"subject": "107-0044", "visit": "SCR", "fields": {"LB_CREAT": 1.1}}, crf_err("LB_CREAT")),
             FB("1.1 is mg/dL from a US lab; the form wants µmol/L, which is about 97. Resubmitting the same number "
                "can't pass.", "negative")),
      ],
      [
          "enter visit 3 labs for subject 104-0027: glucose 98, creatinine 0.9 (Boston site, US lab)",
          "VALIDATION_ERROR: value outside expected range (field LB_GLUC). The Houston lab sheet says 112 mg/dL",
          "I'm the CRA for our two American sites. Their coordinators keep telling me the eCRF 'rejects perfectly normal "
          "lab results', for example a creatinine of 0.8 for subject 109-0003 at week 12. Could you enter those for "
          "them and tell me what they're doing wrong?",
          "eCRF rejects normal lab values from our American site",
      ]),
    F("ecrf-genuine-outlier", "clinical-trials", CRF_TOOLS, "ecrf-lab-unit-conversion", "operation",
      "When the site has checked an out-of-range value against the source document and it is real, submit it "
      "unchanged with confirm_out_of_range=true and a comment; don't convert or edit the value.",
      ["confirm_out_of_range", "confirm the value", "source-verified"],
      [
          TX("wrong-alt+user-corrects", "Enter the unscheduled-visit glucose of 1.9 for subject 201-0318 (Lyon site)", "partial",
             U("Unscheduled visit for subject 201-0318, Lyon site: glucose 1.9, the patient had a hypo at home."),
             E("submit_crf", {"subject": "201-0318", "visit": "UNS1", "fields": {"LB_GLUC": 1.9}}, crf_err("LB_GLUC")),
             R("Probably a unit problem; convert it."),
             E("submit_crf", {"subject": "201-0318", "visit": "UNS1", "fields": {"LB_GLUC": 0.1}}, crf_err("LB_GLUC")),
             U("Stop changing the number! Lyon's numbers are already in the form's units. 1.9 is real, the investigator checked the "
               "source. Submit it as is and flag it as a confirmed out-of-range value."),
             OK("submit_crf", {"subject": "201-0318", "visit": "UNS1", "fields": {"LB_GLUC": 1.9}, "confirm_out_of_range": True,
                               "comment": "Severe hypoglycaemia, source-verified by PI"}, {"saved": True, "status": "complete"}),
             FB("Saved, but a converted value nearly went into the database.", "negative")),
          TX("rule-first", "Record potassium 6.8 for subject 205-0071 at week 8; the site says it's real", "success",
             U("Week 8 potassium for 205-0071 is 6.8. The site checked it: the sample wasn't haemolysed and the patient was admitted for hyperkalaemia."),
             R("6.8 is outside the expected range and the form will reject it, but the site has verified it "
               "against the source, so it must be entered unchanged with the out-of-range confirmation and a comment."),
             OK("submit_crf", {"subject": "205-0071", "visit": "W8", "fields": {"LB_K": 6.8}, "confirm_out_of_range": True,
                               "comment": "Verified against source; SAE report filed"}, {"saved": True}),
             OK("open_query", {"subject": "205-0071", "visit": "W8", "field": "LB_K", "text": "Please confirm SAE form cross-reference"},
                {"query_id": "Q-8810"})),
      ],
      [
          "subject 211-0140 potassium 6.9 at week 8; the investigator checked it against the hospital record, it's genuine, the patient was admitted",
          "VALIDATION_ERROR value outside expected range (field LB_GLUC). Genuine hypoglycaemic episode, 2.1, Madrid site",
          "The Milan site called: subject 230-0005 had a sodium of 118 at the week 6 visit, which is shocking but true, "
          "she was hospitalised the same day and the lab repeated the test. The CRF won't take it and the coordinator is "
          "worried about missing the data-entry deadline.",
          "extreme but real lab value won't save in the eCRF",
      ]),

    F("lift-take-out-of-service", "lift-maintenance", LIFT_TOOLS, "lift-entrapment-rescue", "operation",
      "Invasive planned work (door operator replacement, rope change, controller swap) needs the lift set out of "
      "service with set_unit_status, and the building notified, before dispatch_technician.",
      ["set_unit_status", "out of service", "out-of-service"],
      [
          TX("fail-fix-reasoned", "Send a technician to replace the door operator on lift L-3310 on Tuesday", "success",
             U("Send a technician to replace the door operator on lift L-3310 at Mercer House on Tuesday."),
             E("dispatch_technician", {"unit": "L-3310", "job": "door_operator_replacement", "date": "2026-09-15"}, LIFT_ERR),
             R("A door operator replacement takes the lift apart, so the unit has to be taken out of service first, "
               "and the building told."),
             OK("set_unit_status", {"unit": "L-3310", "status": "out_of_service", "from": "2026-09-15T08:00:00Z"}, {"status": "out_of_service"}),
             OK("notify_building", {"unit": "L-3310", "message": "Lift unavailable Tue 15 Sep 08:00-16:00 for planned works"}, {"sent": True}),
             OK("dispatch_technician", {"unit": "L-3310", "job": "door_operator_replacement", "date": "2026-09-15"}, {"job_id": "JB-44102", "tech": "R. Nakamura"})),
          TX("explain-after+long-noisy", "Plan the hoist rope change on goods lift L-1207 and this month's inspections", "success",
             U("Plan this month's routine checks for the Quayside portfolio and the hoist rope change on goods lift L-1207."),
             OK("get_unit", {"unit": "L-1201"}, {"status": "in_service", "last_check": "2026-08-03"}),
             OK("dispatch_technician", {"unit": "L-1201", "job": "routine_check", "date": "2026-09-07"}, {"job_id": "JB-44150"}),
             OK("get_unit", {"unit": "L-1204"}, {"status": "in_service", "last_check": "2026-08-04"}),
             OK("dispatch_technician", {"unit": "L-1204", "job": "routine_check", "date": "2026-09-07"}, {"job_id": "JB-44151"}),
             E("dispatch_technician", {"unit": "L-1207", "job": "hoist_rope_change", "date": "2026-09-09"}, LIFT_ERR),
             OK("set_unit_status", {"unit": "L-1207", "status": "out_of_service", "from": "2026-09-09T07:00:00Z"}, {"status": "out_of_service"}),
             OK("notify_building", {"unit": "L-1207", "message": "Goods lift closed Wed 9 Sep for rope replacement"}, {"sent": True}),
             OK("dispatch_technician", {"unit": "L-1207", "job": "hoist_rope_change", "date": "2026-09-09"}, {"job_id": "JB-44152"}),
             R("All booked. The rope change needed the goods lift taken out of service (and the tenants notified) "
               "before the dispatch would go through; routine checks don't."),
             FB("Great.")),
      ],
      [
          "send a tech to replace the door operator on lift L-2207 next Tuesday",
          "DISPATCH_BLOCKED: unit status does not permit this job type. Planned hoist rope change on the service lift at Dock Tower",
          "We're finally upgrading the 1990s controller on the passenger lift at Carlton Court (L-0815). The engineer "
          "is available Thursday and Friday. I tried to book him from the portal and it wouldn't let me. The residents "
          "have the stairs, it's only three floors. Can you arrange it?",
          "controller swap on lift 1 at Albion Mews, book the engineer",
      ]),
    F("lift-entrapment-rescue", "lift-maintenance", LIFT_TOOLS, "lift-take-out-of-service", "operation",
      "A passenger trapped in a lift is dispatched as job 'rescue' with priority 'P1_entrapment', which needs no prior "
      "status change; don't take the unit through the planned-work steps first.",
      ["p1_entrapment", "rescue", "priority"],
      [
          TX("wrong-alt+user-corrects", "Lift L-2040 at Ferry Court stuck between floors with a resident inside", "partial",
             U("Lift L-2040 at Ferry Court is stuck between floors 6 and 7 and the doors won't open, a resident is inside."),
             E("dispatch_technician", {"unit": "L-2040", "job": "door_fault", "date": "2026-11-02"}, LIFT_ERR),
             R("Door work needs the unit out of service first."),
             OK("set_unit_status", {"unit": "L-2040", "status": "out_of_service"}, {"status": "out_of_service"}),
             OK("notify_building", {"unit": "L-2040", "message": "Lift out of service"}, {"sent": True}),
             OK("dispatch_technician", {"unit": "L-2040", "job": "door_fault", "date": "2026-11-02"}, {"job_id": "JB-45010", "eta_hours": 4}),
             U("Four hours?! There's an elderly woman trapped in there. That is an entrapment call, get someone now."),
             OK("dispatch_technician", {"unit": "L-2040", "job": "rescue", "priority": "P1_entrapment"}, {"job_id": "JB-45011", "eta_minutes": 25}),
             FB("She was out after 40 minutes, but you lost ten on paperwork.", "negative")),
          TX("fail-fix-reasoned", "Two people trapped in lift L-0931 at the Exchange building", "success",
             U("Two people are trapped in lift L-0931 at the Exchange building, ground floor, doors jammed."),
             E("dispatch_technician", {"unit": "L-0931", "job": "door_fault"}, LIFT_ERR),
             R("People are trapped inside, so this isn't a planned door job: it's a rescue, dispatched at entrapment "
               "priority, which doesn't wait for a status change."),
             OK("dispatch_technician", {"unit": "L-0931", "job": "rescue", "priority": "P1_entrapment"}, {"job_id": "JB-45090", "eta_minutes": 20}),
             OK("notify_building", {"unit": "L-0931", "message": "Engineer on the way, ETA 20 min, stay with the passengers"}, {"sent": True})),
      ],
      [
          "two people stuck in car 2 at Harbour House, doors won't open",
          "DISPATCH_BLOCKED: unit status does not permit this job type. Lift jammed between floors 4 and 5 with a resident in it",
          "Hi, I'm the concierge at Linden Heights. The left lift (L-5521) stopped between floors about ten minutes ago "
          "and there's a delivery driver inside pressing the alarm. We've told him to stay calm but he's getting "
          "anxious. What do we do and can you get somebody out here?",
          "kid stuck in the lift at block C",
      ]),

    F("terminal-check-customs-hold", "container-terminal", ["get_container_status", "book_truck_slot", "cancel_slot"], None, "operation",
      "Before booking a truck pick-up slot, check get_container_status: a box on customs or line hold can't be collected, "
      "and a slot booked for it is refused (or becomes a no-show charge). Book only once it is released.",
      ["get_container_status", "customs hold", "released"],
      [
          TX("fail-fix-reasoned", "Book a pick-up slot tomorrow morning for container HLXU 820331-5", "partial",
             U("Book a pick-up slot tomorrow morning for HLXU 820331-5, our haulier is Brennan Transport."),
             E("book_truck_slot", {"container": "HLXU8203315", "date": "2026-07-22", "window": "06:00-08:00", "haulier": "BRENNAN"},
               "SLOT_REFUSED: unit not available for delivery"),
             R("Check why the box isn't available before trying other windows."),
             OK("get_container_status", {"container": "HLXU8203315"}, {"discharged": True, "customs": "hold (exam)", "line_release": True}),
             R("Customs have it held for an examination; no slot can be booked until it's released. I'll tell the "
               "user and check again after the exam."),
             S("HLXU8203315.next_check", "2026-07-22T10:00:00Z"),
             FB("OK, at least we know why.")),
          TX("rule-first", "Get a slot on Thursday for MSCU 771042-8", "success",
             U("Get a slot on Thursday for MSCU 771042-8."),
             R("Slots are refused for boxes still on customs or line hold, so check the status first."),
             OK("get_container_status", {"container": "MSCU7710428"}, {"discharged": True, "customs": "released", "line_release": True}),
             OK("book_truck_slot", {"container": "MSCU7710428", "date": "2026-07-23", "window": "10:00-12:00", "haulier": "KELLY"},
                {"slot_id": "TS-55102"})),
      ],
      [
          "slot for TGHU 410882-1 tomorrow, 08:00-10:00 window",
          "SLOT_REFUSED: unit not available for delivery",
          "Our driver has been sent away at the gate twice this week for the same container (CAIU 551029-3) and the "
          "haulier is threatening to charge us for wasted trips. Can you book a proper collection for Friday and make "
          "sure it actually works this time?",
          "book a truck collection for a box that discharged yesterday",
      ]),
    F("airquality-seven-day-window", "air-quality-sensors", ["list_sensors", "get_readings", "export_csv"], None, "analysis",
      "get_readings returns at most 7 days per call (a longer range answers RANGE_TOO_LARGE); split the period into "
      "7-day windows, call once per window and merge before export_csv.",
      ["7-day", "chunk", "one week at a time"],
      [
          TX("blind-retries", "Export March PM2.5 for sensor AQ-1102 as CSV", "failure",
             U("Export March PM2.5 for sensor AQ-1102 as a CSV for the council report."),
             E("get_readings", {"sensor": "AQ-1102", "metric": "pm25", "from": "2026-03-01", "to": "2026-03-31"},
               "RANGE_TOO_LARGE: requested range exceeds limit"),
             E("get_readings", {"sensor": "AQ-1102", "metric": "pm25", "from": "2026-03-01", "to": "2026-03-31"},
               "RANGE_TOO_LARGE: requested range exceeds limit"),
             FB("The API only gives 7 days per request; you had to ask in 7-day windows and join them. The report went "
                "out without the data.", "negative")),
          TX("long-noisy+fail-fix-silent", "Compare NO2 at the school sensors AQ-2201 and AQ-2204 over the last three weeks", "success",
             U("Compare NO2 at the school sensors AQ-2201 and AQ-2204 over the last three weeks, and tell me which one has more exceedances."),
             OK("list_sensors", {"site": "schools"}, [{"id": "AQ-2201", "site": "St Mary's"}, {"id": "AQ-2204", "site": "Park Lane"},
                                                     {"id": "AQ-2209", "site": "Hillside", "status": "offline"}]),
             E("get_readings", {"sensor": "AQ-2201", "metric": "no2", "from": "2026-04-01", "to": "2026-04-21"},
               "RANGE_TOO_LARGE: requested range exceeds limit"),
             OK("get_readings", {"sensor": "AQ-2201", "metric": "no2", "from": "2026-04-01", "to": "2026-04-07"}, {"points": 1008}),
             OK("get_readings", {"sensor": "AQ-2201", "metric": "no2", "from": "2026-04-08", "to": "2026-04-14"}, {"points": 1008}),
             OK("get_readings", {"sensor": "AQ-2201", "metric": "no2", "from": "2026-04-15", "to": "2026-04-21"}, {"points": 1008}),
             OK("get_readings", {"sensor": "AQ-2204", "metric": "no2", "from": "2026-04-01", "to": "2026-04-07"}, {"points": 1008}),
             OK("get_readings", {"sensor": "AQ-2204", "metric": "no2", "from": "2026-04-08", "to": "2026-04-14"}, {"points": 1008}),
             OK("get_readings", {"sensor": "AQ-2204", "metric": "no2", "from": "2026-04-15", "to": "2026-04-21"}, {"points": 996}),
             S("analysis.exceedances", {"AQ-2201": 3, "AQ-2204": 11}),
             OK("export_csv", {"series": ["AQ-2201/no2", "AQ-2204/no2"], "from": "2026-04-01", "to": "2026-04-21"}, {"file": "no2_schools_apr.csv"}),
             FB("Very useful, thanks.")),
      ],
      [
          "download ozone for AQ-3310 for the whole of Q2",
          "RANGE_TOO_LARGE: requested range exceeds limit",
          "For our annual air quality status report I need the hourly PM10 values of all four roadside monitors from "
          "January to June, as a spreadsheet. The dashboard lets me look at it but the data request keeps failing. "
          "Could you pull it together?",
          "monthly NO2 export from sensor AQ-0902 fails",
      ]),
]
