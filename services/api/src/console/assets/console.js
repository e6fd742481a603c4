// The console's only script: live updates over the API's Server-Sent Events streams,
// served again under /console/streams/. Pages read and work without it.
"use strict";

(function () {
  // A line's classes, as the server shows them: log-<level>, ansi-<colour>, diagnostic.
  function lineOf(data) {
    var message = String(data.message || "");
    var colour = null;
    // ANSI escapes out; the first foreground colour kept as a class.
    var text = message.replace(/\u001b\[([0-9;]*)([A-Za-z])/g, function (_, params, end) {
      if (end === "m" && colour === null) {
        params.split(";").forEach(function (n) {
          var v = parseInt(n, 10);
          if (colour === null && ((v >= 30 && v <= 37) || (v >= 90 && v <= 97))) colour = v;
        });
      }
      return "";
    });
    var level = String(data.level || "").replace(/[^A-Za-z0-9]/g, "").slice(0, 16);
    var span = document.createElement("span");
    span.className = "log-" + level;
    if (colour !== null) span.className += " ansi-" + colour;
    if (data.kind === "diagnostic" && level === "error") span.className += " diagnostic";
    span.textContent = text;
    span.dataset.job = data.job_id;
    span.dataset.line = data.line;
    return span;
  }

  function setText(el, text) {
    if (el && el.textContent !== text) el.textContent = text;
  }

  // A row of the list stream: its status and address where the page shows them.
  function showRow(row, el) {
    setText(el.querySelector(".status"), row.status);
    var ip = el.querySelector(".ip");
    if (ip && row.ip) setText(ip, row.ip);
  }

  function followList(table) {
    var source = new EventSource("/console/streams/vms");
    source.addEventListener("vm", function (e) {
      var row = JSON.parse(e.data);
      var el = table.querySelector('tr[data-vm="' + row.id + '"]');
      if (el) showRow(row, el);
    });
    source.addEventListener("end", function () { source.close(); });
  }

  function setJob(id, state) {
    var row = document.getElementById("job-" + id);
    if (!row) return;
    setText(row.querySelector(".status"), state);
    // A job that is over has nothing left to cancel.
    if (["succeeded", "failed", "cancelled"].indexOf(state) >= 0) {
      Array.prototype.forEach.call(row.querySelectorAll("form"), function (f) { f.remove(); });
    }
  }

  function followVm(vm) {
    var id = vm.dataset.vm;
    var log = document.getElementById("log");
    var last = {};
    Array.prototype.forEach.call(log.querySelectorAll("span[data-job]"), function (s) {
      var job = s.dataset.job, line = parseInt(s.dataset.line, 10);
      if (!(job in last) || line > last[job]) last[job] = line;
    });
    var list = new EventSource("/console/streams/vms");
    list.addEventListener("vm", function (e) {
      var row = JSON.parse(e.data);
      if (row.id !== id) return;
      setText(document.getElementById("status"), row.status);
      if (row.ip) setText(document.getElementById("ip"), row.ip);
      if (row.job) setJob(row.job.id, row.job.state);
      (row.queue || []).forEach(function (j) { setJob(j.id, j.state); });
    });
    list.addEventListener("end", function () { list.close(); });

    var since = log.dataset.since || "0";
    var events = new EventSource("/console/streams/vms/" + id + "?since=" + since);
    var ended = { Applied: "succeeded", Refreshed: "succeeded", Destroyed: "succeeded",
      InstallEnded: "succeeded", Failed: "failed", JobCancelled: "cancelled", JobStarted: "running" };
    events.addEventListener("end", function () { events.close(); });
    ["LogLine"].concat(Object.keys(ended)).forEach(function (type) {
      events.addEventListener(type, function (e) {
        var event = JSON.parse(e.data);
        var data = event.data || {};
        if (type !== "LogLine") {
          if (data.job_id) setJob(data.job_id, ended[type]);
          if (type === "JobStarted") { log.textContent = ""; last = {}; }
          return;
        }
        var job = String(data.job_id);
        if (job in last && data.line <= last[job]) return;
        last[job] = data.line;
        log.appendChild(lineOf(data));
        log.appendChild(document.createTextNode("\n"));
        log.scrollTop = log.scrollHeight;
      });
    });
  }

  // The gauges page: each `gauges` event of its stream holds every figure the page shows.
  function fillRows(tbody, rows, header) {
    var trs = rows.map(function (row) {
      var tr = document.createElement("tr");
      row.forEach(function (value, i) {
        var cell = document.createElement(i === header ? "th" : "td");
        if (i === header) cell.scope = "row";
        cell.textContent = String(value);
        tr.appendChild(cell);
      });
      return tr;
    });
    tbody.replaceChildren.apply(tbody, trs);
  }

  function followGauges() {
    var source = new EventSource("/console/admin/gauges/stream");
    source.addEventListener("gauges", function (e) {
      var g = JSON.parse(e.data);
      setText(document.getElementById("gauges-at"), g.at);
      setText(document.getElementById("jobs-running"), String(g.running));
      setText(document.getElementById("jobs-queued"), String(g.queued));
      setText(document.getElementById("jobs-oldest"), g.oldest);
      fillRows(document.getElementById("vms-by-status"), g.by_status, 0);
      fillRows(document.getElementById("vms-by-provider"), g.by_provider, 0);
      fillRows(document.getElementById("consumer-lag"), g.consumers, 1);
    });
    source.addEventListener("end", function () { source.close(); });
  }

  // A job's page: its lines and state while it is queued or running.
  function followJob(el) {
    var id = el.dataset.vm, job = el.dataset.job;
    var log = document.getElementById("log");
    var last = 0;
    Array.prototype.forEach.call(log.querySelectorAll("span[data-line]"), function (s) {
      last = Math.max(last, parseInt(s.dataset.line, 10));
    });
    var events = new EventSource("/console/streams/vms/" + id + "?since=" + (log.dataset.since || "0"));
    var states = { Applied: "succeeded", Refreshed: "succeeded", Destroyed: "succeeded",
      InstallEnded: "succeeded", Failed: "failed", JobCancelled: "cancelled", JobStarted: "running" };
    events.addEventListener("end", function () { events.close(); });
    ["LogLine"].concat(Object.keys(states)).forEach(function (type) {
      events.addEventListener(type, function (e) {
        var data = JSON.parse(e.data).data || {};
        if (String(data.job_id) !== job) return;
        if (type !== "LogLine") {
          setText(document.getElementById("job-state"), states[type]);
          if (type !== "JobStarted") events.close();
          return;
        }
        if (data.line <= last) return;
        last = data.line;
        log.appendChild(lineOf(data));
        log.appendChild(document.createTextNode("\n"));
        log.scrollTop = log.scrollHeight;
      });
    });
  }

  function cell(row, text) {
    var td = document.createElement("td");
    td.textContent = text;
    row.appendChild(td);
    return td;
  }

  // The audit page: events of the admin stream (same filters) put above the others.
  function followAudit(button) {
    var rows = document.getElementById("live-events");
    var state = document.getElementById("follow-state");
    var source = null;
    button.hidden = false;
    button.addEventListener("click", function () {
      if (source) {
        source.close();
        source = null;
        button.textContent = "Follow live";
        setText(state, "");
        return;
      }
      document.getElementById("live-section").hidden = false;
      source = new EventSource(button.dataset.stream);
      button.textContent = "Stop following";
      setText(state, "Following live.");
      source.addEventListener("message", function (e) {
        var event = JSON.parse(e.data);
        if (document.querySelector('tr[data-position="' + event.position + '"]')) return;
        var row = document.createElement("tr");
        row.dataset.position = event.position;
        cell(row, String(event.position));
        cell(row, String(event.recorded_at || "").slice(0, 16).replace("T", " ") + " UTC");
        cell(row, event.actor || "");
        cell(row, event.type).className = "type";
        var vm = cell(row, "");
        if (event.aggregate_type === "Provisioning") {
          var a = document.createElement("a");
          a.href = "/console/vms/" + encodeURIComponent(event.aggregate_id);
          a.textContent = event.aggregate_id;
          vm.appendChild(a);
        } else {
          vm.textContent = event.aggregate_type;
        }
        var data = JSON.stringify(event.data);
        var code = document.createElement("code");
        code.textContent = data.length > 120 ? data.slice(0, 120) + "\u2026" : data;
        cell(row, "").appendChild(code);
        rows.insertBefore(row, rows.firstChild);
      });
      source.addEventListener("end", function () {
        source.close();
        source = null;
        button.textContent = "Follow live";
        setText(state, "The stream ended.");
      });
    });
  }

  var table = document.querySelector('table[data-live="vms"]');
  if (table) followList(table);
  var vm = document.getElementById("vm");
  if (vm && vm.dataset.vm) followVm(vm);
  if (document.getElementById("gauges")) followGauges();
  var job = document.getElementById("job");
  if (job && job.dataset.open) followJob(job);
  var follow = document.getElementById("follow");
  if (follow && follow.dataset.stream) followAudit(follow);
})();
