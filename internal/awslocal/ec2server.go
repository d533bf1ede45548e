package awslocal

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ec2Namespace is the xmlns of every EC2 answer.
const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// ec2Action answers one EC2 action; it runs with Cloud.mu held.
type ec2Action func(c *Cloud, form url.Values) (response, *APIError)

// response is an action's answer body; the server fills in the request ID.
type response interface{ setRequestID(string) }

type requestID struct {
	RequestID string `xml:"requestId"`
}

func (r *requestID) setRequestID(id string) { r.RequestID = id }

// returnTrue is the answer of actions that only report success.
type returnTrue struct {
	requestID
	Return bool `xml:"return"`
}

var ec2Actions = map[string]ec2Action{
	"DescribeInstanceTypes":           (*Cloud).describeInstanceTypes,
	"DescribeNetworkInterfaces":       (*Cloud).describeNetworkInterfaces,
	"CreateNetworkInterface":          (*Cloud).createNetworkInterface,
	"CreateTags":                      (*Cloud).createTags,
	"AttachNetworkInterface":          (*Cloud).attachNetworkInterface,
	"DetachNetworkInterface":          (*Cloud).detachNetworkInterface,
	"DeleteNetworkInterface":          (*Cloud).deleteNetworkInterface,
	"ModifyNetworkInterfaceAttribute": (*Cloud).modifyNetworkInterfaceAttribute,
	"AssignPrivateIpAddresses":        (*Cloud).assignPrivateIPAddresses,
	"AssignIpv6Addresses":             (*Cloud).assignIPv6Addresses,
	"UnassignPrivateIpAddresses":      (*Cloud).unassignPrivateIPAddresses,
}

func (c *Cloud) serveEC2(w http.ResponseWriter, r *http.Request) {
	reqID := newRequestID()
	if r.Method != http.MethodPost {
		writeEC2Error(w, reqID, &APIError{HTTPStatus: http.StatusMethodNotAllowed, Code: "InvalidAction", Message: "EC2 takes POST"})
		return
	}
	if err := r.ParseForm(); err != nil {
		writeEC2Error(w, reqID, apiErrorf("MalformedQueryString", "%v", err))
		return
	}
	action := r.PostForm.Get("Action")
	c.setInFlight(+1)
	defer c.setInFlight(-1)
	if hold := c.currentFaults().Hold; hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return // the client gave up; nothing happened
		}
	}
	resp, apiErr := c.handle(action, r.Header.Get("Authorization"), callParams(r.PostForm))
	if apiErr != nil {
		writeEC2Error(w, reqID, apiErr)
		return
	}
	resp.setRequestID(reqID)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	start := xml.StartElement{
		Name: xml.Name{Local: action + "Response"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: ec2Namespace}},
	}
	w.Write([]byte(xml.Header)) //nolint:errcheck // the client sees a short body
	xml.NewEncoder(w).EncodeElement(resp, start)
}

// handle counts the call, applies faults and runs the action.
func (c *Cloud) handle(action, authorization string, form url.Values) (response, *APIError) {
	latency, fault := c.count(action, form)
	if latency > 0 {
		time.Sleep(latency) // outside the lock: slow calls must not serialize the others
	}
	if fault != nil {
		return nil, fault
	}
	if !strings.HasPrefix(authorization, "AWS4-HMAC-SHA256 ") {
		return nil, &APIError{HTTPStatus: http.StatusUnauthorized, Code: "AuthFailure", Message: "AWS was not able to validate the provided access credentials"}
	}
	run, ok := ec2Actions[action]
	if !ok {
		return nil, apiErrorf("InvalidAction", "The action %s is not valid for this web service.", action)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return run(c, form)
}

func (c *Cloud) setInFlight(delta int) { c.inFlight.Add(int64(delta)) }

func (c *Cloud) currentFaults() Faults {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.faults
}

// count records the call and decides which fault, if any, answers it.
func (c *Cloud) count(action string, form url.Values) (time.Duration, *APIError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := c.total.Add(1)
	c.calls[action]++
	c.log = append(c.log, Call{Action: action, Params: form})
	f := c.faults
	if f.ThrottleEvery > 0 && total%int64(f.ThrottleEvery) == 0 {
		c.throttle.Add(1)
		return f.Latency, &APIError{HTTPStatus: http.StatusServiceUnavailable, Code: "RequestLimitExceeded", Message: "Request limit exceeded."}
	}
	if e, ok := f.FailActions[action]; ok {
		if e.HTTPStatus == 0 {
			e.HTTPStatus = http.StatusBadRequest
		}
		return f.Latency, &e
	}
	return f.Latency, nil
}

// writeEC2Error writes EC2's error document, which differs in shape from
// the success answers: <Response><Errors><Error>...</Errors><RequestID>.
func writeEC2Error(w http.ResponseWriter, reqID string, e *APIError) {
	type errorXML struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	body := struct {
		XMLName   xml.Name   `xml:"Response"`
		Errors    []errorXML `xml:"Errors>Error"`
		RequestID string     `xml:"RequestID"`
	}{Errors: []errorXML{{Code: e.Code, Message: e.Message}}, RequestID: reqID}
	status := e.HTTPStatus
	if status == 0 {
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	w.Write([]byte(xml.Header)) //nolint:errcheck // the client sees a short body
	xml.NewEncoder(w).Encode(body)
}

// callParams is the form without Action and Version, a copy the call log
// can keep.
func callParams(form url.Values) url.Values {
	out := url.Values{}
	for k, v := range form {
		if k != "Action" && k != "Version" {
			out[k] = slices.Clone(v)
		}
	}
	return out
}

func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// listParam reads a query-API list: name.1, name.2, ... until a gap.
func listParam(form url.Values, name string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[name+"."+strconv.Itoa(i)]
		if !ok || len(v) == 0 {
			return out
		}
		out = append(out, v[0])
	}
}

// tagsParam reads prefix.N.Key / prefix.N.Value pairs.
func tagsParam(form url.Values, prefix string) map[string]string {
	tags := map[string]string{}
	for i := 1; ; i++ {
		p := prefix + "." + strconv.Itoa(i)
		key, ok := form[p+".Key"]
		if !ok {
			return tags
		}
		tags[key[0]] = form.Get(p + ".Value")
	}
}

// filter is one Filter.N of a Describe call.
type filter struct {
	name   string
	values []string
}

func filtersParam(form url.Values) []filter {
	var out []filter
	for i := 1; ; i++ {
		p := "Filter." + strconv.Itoa(i)
		name, ok := form[p+".Name"]
		if !ok {
			return out
		}
		out = append(out, filter{name: name[0], values: listParam(form, p+".Value")})
	}
}

func intParam(form url.Values, name string) (int, *APIError) {
	v := form.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, apiErrorf("InvalidParameterValue", "Value (%s) for parameter %s is invalid.", v, name)
	}
	return n, nil
}

func requiredParam(form url.Values, name string) (string, *APIError) {
	v := form.Get(name)
	if v == "" {
		return "", apiErrorf("MissingParameter", "The request must contain the parameter %s", name)
	}
	return v, nil
}
